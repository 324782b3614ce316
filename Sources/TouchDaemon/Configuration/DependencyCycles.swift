/// The cycles of a "depends on" relation between declared ids (a group's `parent`, a gesture's `requires_failure_of`),
/// one per knot, found in linear time.
///
/// Reporting every cycle through every member made a ring of 1,000 groups print 1,000 lines of 1,000 names (9 MB) and
/// took seconds; a knot of gestures can hold exponentially many cycles. One cycle per strongly connected component is
/// what a person needs: breaking it either fixes the knot or shows the next cycle at the next check.
enum DependencyCycles {
    /// A cycle to report.
    struct Cycle: Equatable {
        /// The cycle in order, starting at its first declared member (not repeated at the end); one id for an id that
        /// depends on itself.
        var members: [String]
        /// Further ids of the same knot that are not on this cycle, in declaration order: they are on cycles with it.
        var others: [String]

        /// How many members a cycle may have and still be written out whole.
        static let shownWhole = 6

        /// `KEY cycle: a → b → a`; for a longer cycle its first members, the last one and a count:
        /// `KEY cycle of 1000 groups: g0 → g1 → g2 → g3 → … → g999 → g0`; then the knot's other members, if any.
        func describe(key: String, kind: String) -> String {
            var text: String
            if members.count <= Self.shownWhole {
                text = "\(key) cycle: " + (members + [members[0]]).joined(separator: " → ")
            } else {
                let shown = members.prefix(4) + ["…", members[members.count - 1], members[0]]
                text = "\(key) cycle of \(members.count) \(kind)s: " + shown.joined(separator: " → ")
            }
            if !others.isEmpty {
                let names = others.prefix(3).joined(separator: ", ") + (others.count > 3 ? ", …" : "")
                let number = others.count == 1 ? "1 more \(kind) is" : "\(others.count) more \(kind)s are"
                text += "; \(number) on cycles with it: \(names)"
            }
            return text
        }
    }

    /// One cycle for each knot (strongly connected component with a cycle) of `edges`, in the declaration order of
    /// the knots' first members. Successors that are not declared ids are ignored (they are reported as unknown).
    static func find(_ edges: [(id: String, next: [String])]) -> [Cycle] {
        var order: [String: Int] = [:]
        for (index, edge) in edges.enumerated() where order[edge.id] == nil { order[edge.id] = index }
        let successors = edges.map { $0.next.compactMap { order[$0] } }
        var cycles: [(first: Int, cycle: Cycle)] = []
        for component in components(successors) {
            let start = component.min()!
            guard component.count > 1 || successors[start].contains(start) else { continue }
            let members = Set(component)
            // The shortest way back to the start within the knot (breadth first), so the cycle shown is a short one.
            var previous: [Int: Int] = [:]
            var queue = [start]
            var head = 0
            search: while head < queue.count {
                let node = queue[head]
                head += 1
                for next in successors[node] where members.contains(next) {
                    if next == start {
                        previous[start] = node
                        break search
                    }
                    if previous[next] == nil {
                        previous[next] = node
                        queue.append(next)
                    }
                }
            }
            var path: [Int] = []
            var node = previous[start]!
            while node != start {
                path.append(node)
                node = previous[node]!
            }
            path.append(start)
            path.reverse()
            let onCycle = Set(path)
            let others = component.filter { !onCycle.contains($0) }.sorted()
            cycles.append(
                (start, Cycle(members: path.map { edges[$0].id }, others: others.map { edges[$0].id })))
        }
        return cycles.sorted { $0.first < $1.first }.map(\.cycle)
    }

    /// The strongly connected components of a graph given as successor lists (Tarjan's algorithm, with an explicit
    /// stack so that a chain of thousands of ids cannot overflow the thread's stack).
    static func components(_ successors: [[Int]]) -> [[Int]] {
        let count = successors.count
        var index = [Int](repeating: -1, count: count)
        var low = [Int](repeating: 0, count: count)
        var onStack = [Bool](repeating: false, count: count)
        var stack: [Int] = []
        var components: [[Int]] = []
        var nextIndex = 0
        for root in 0..<count where index[root] < 0 {
            index[root] = nextIndex
            low[root] = nextIndex
            nextIndex += 1
            stack.append(root)
            onStack[root] = true
            // Each frame: a node and how many of its successors have been looked at.
            var work = [(node: root, edge: 0)]
            while let (node, edge) = work.last {
                if edge < successors[node].count {
                    work[work.count - 1].edge += 1
                    let successor = successors[node][edge]
                    if index[successor] < 0 {
                        index[successor] = nextIndex
                        low[successor] = nextIndex
                        nextIndex += 1
                        stack.append(successor)
                        onStack[successor] = true
                        work.append((successor, 0))
                    } else if onStack[successor] {
                        low[node] = min(low[node], index[successor])
                    }
                    continue
                }
                work.removeLast()
                if let parent = work.last?.node { low[parent] = min(low[parent], low[node]) }
                guard low[node] == index[node] else { continue }
                var component: [Int] = []
                while let member = stack.popLast() {
                    onStack[member] = false
                    component.append(member)
                    if member == node { break }
                }
                components.append(component)
            }
        }
        return components
    }
}
