import PushSwarmCore
@testable import PushSwarmNet
import Testing

/// A pool's wait queue on its own: the order requests get connections in, those that leave early
/// (timed out) never given one, tickets that stay valid as the queue moves.
@Suite struct WaitQueueTests {
    private final class Item {
        let id: Int
        init(_ id: Int) { self.id = id }
    }

    @Test func elementsComeOutOldestFirstAndThoseThatLeftNever() {
        var queue = WaitQueue<Item>()
        let items = (0..<6).map(Item.init)
        let tickets = items.map { queue.push($0) }
        #expect(queue.count == 6)
        let removedOne = queue.remove(items[1], ticket: tickets[1])
        #expect(removedOne)
        let removedFour = queue.remove(items[4], ticket: tickets[4])
        #expect(removedFour)
        let removedTwice = queue.remove(items[4], ticket: tickets[4])
        #expect(!removedTwice, "removed twice")
        let byOtherTicket = queue.remove(items[2], ticket: tickets[3])
        #expect(!byOtherTicket, "another element's ticket")
        #expect(queue.count == 4 && queue.held == 4)
        var order: [Int] = []
        while let item = queue.pop() { order.append(item.id) }
        #expect(order == [0, 2, 3, 5])
        #expect(queue.count == 0 && queue.held == 0)
        let afterPop = queue.remove(items[0], ticket: tickets[0])
        #expect(!afterPop, "popped already")
    }

    /// A request retried on a new connection goes back to the front, whether or not a spent slot
    /// is free there, and every other ticket still finds its element.
    @Test func anElementPutBackAtTheFrontComesOutFirst() {
        var queue = WaitQueue<Item>()
        let items = (0..<4).map(Item.init)
        var tickets = items.prefix(3).map { queue.push($0) }
        let retried = Item(9)
        _ = queue.push(retried, atFront: true)  // no spent slot: inserted
        let removedOne = queue.remove(items[1], ticket: tickets[1])
        #expect(removedOne)
        let first = queue.pop()
        #expect(first === retried)
        let second = queue.pop()
        #expect(second === items[0])
        tickets.append(queue.push(items[3]))
        _ = queue.push(retried, atFront: true)  // into the spent slot
        #expect(queue.count == 3)
        let removedThree = queue.remove(items[3], ticket: tickets[3])
        #expect(removedThree)
        let third = queue.pop()
        #expect(third === retried)
        let fourth = queue.pop()
        #expect(fourth === items[2])
        let empty = queue.pop()
        #expect(empty == nil)
    }

    /// Against a plain model, through a lasting overload in which the queue never empties and
    /// its spent front is cut off many times: the same elements come out in the same order,
    /// and a ticket from before a cut removes its own element.
    @Test func itAgreesWithAPlainModelThroughALastingOverload() {
        var queue = WaitQueue<Item>()
        var model: [(item: Item, ticket: Int)] = []  // waiting, front first
        var random = SeededRandom(seed: 36, stream: .device)
        var next = 0
        var popped = 0
        for step in 0..<200_000 {
            let roll = random.nextIndex(below: 100)
            if roll < 50 || model.count < 10 {
                let item = Item(next)
                next += 1
                let front = roll < 3
                let ticket = queue.push(item, atFront: front)
                if front { model.insert((item, ticket), at: 0) } else { model.append((item, ticket)) }
            } else if roll < 80 {
                let expected = model.removeFirst().item
                let item = queue.pop()
                #expect(item === expected, "step \(step)")
                popped += 1
            } else {
                let index = random.nextIndex(below: model.count)
                let (item, ticket) = model.remove(at: index)
                let removed = queue.remove(item, ticket: ticket)
                #expect(removed, "step \(step)")
            }
            if step % 997 == 0 { #expect(queue.count == model.count && queue.held == model.count, "step \(step)") }
        }
        #expect(popped > 50_000)
        while let item = queue.pop() {
            let expected = model.removeFirst().item
            #expect(item === expected)
        }
        #expect(model.isEmpty && queue.count == 0)
    }
}
