import Foundation

/// A probability distribution over non-negative numbers, written in scenario files for durations
/// (in seconds), latencies, and per-device rates.
public enum Distribution: Sendable, Equatable, CustomStringConvertible {
    case constant(Double)
    case uniform(minimum: Double, maximum: Double)
    case exponential(mean: Double)
    /// Log-normal with the given median (e^μ) and σ of the underlying normal.
    case logNormal(median: Double, sigma: Double)

    public func sample(using random: inout SeededRandom) -> Double {
        switch self {
        case .constant(let value):
            return value
        case .uniform(let minimum, let maximum):
            return minimum + (maximum - minimum) * random.nextUnit()
        case .exponential(let mean):
            return random.nextExponential(mean: mean)
        case .logNormal(let median, let sigma):
            return median * exp(sigma * random.nextGaussian())
        }
    }

    /// A sample as a time span, reading the distribution's values as seconds.
    public func sampleSpan(using random: inout SeededRandom) -> TimeSpan {
        .seconds(max(0, sample(using: &random)))
    }

    public var mean: Double {
        switch self {
        case .constant(let value): value
        case .uniform(let minimum, let maximum): (minimum + maximum) / 2
        case .exponential(let mean): mean
        case .logNormal(let median, let sigma): median * exp(sigma * sigma / 2)
        }
    }

    public var description: String {
        switch self {
        case .constant(let value): "constant(\(value))"
        case .uniform(let minimum, let maximum): "uniform(\(minimum)…\(maximum))"
        case .exponential(let mean): "exponential(mean \(mean))"
        case .logNormal(let median, let sigma): "lognormal(median \(median), sigma \(sigma))"
        }
    }
}
