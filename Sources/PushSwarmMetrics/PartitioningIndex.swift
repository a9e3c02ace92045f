extension RandomAccessCollection {
    /// The first index whose element is in the second partition, by binary search: the
    /// collection is partitioned by `isInSecondPartition` (false for a prefix, true for the
    /// rest); `endIndex` when no element is.
    @inlinable
    public func partitioningIndex(where isInSecondPartition: (Element) throws -> Bool) rethrows -> Index {
        var low = startIndex
        var count = self.count
        while count > 0 {
            let half = count / 2
            let middle = index(low, offsetBy: half)
            if try isInSecondPartition(self[middle]) {
                count = half
            } else {
                low = index(after: middle)
                count -= half + 1
            }
        }
        return low
    }
}
