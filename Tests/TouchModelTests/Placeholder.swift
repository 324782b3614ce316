// Placeholder so that SwiftPM sees a Swift test target; the TouchModel tests arrive on their own branch.
