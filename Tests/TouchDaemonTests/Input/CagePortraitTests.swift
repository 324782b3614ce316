import Foundation
import Testing
import TouchModel

@testable import TouchDaemon

/// docs/kiosk.md, "cage in portrait": cage turns the output but not touch, so the recipe turns the panel in libinput
/// (a udev `LIBINPUT_CALIBRATION_MATRIX`) and leaves touchd's rotation at 0. These checks hold the recipe to the code:
/// its matrices are the turns touchd applies for `rotation`, touchd then sees what it saw with its own rotation, and
/// cage, applying the same matrix to what touchd writes to the twin, delivers the point touchd's controls saw.
@Suite("docs/kiosk.md: the cage portrait recipe")
struct CagePortraitTests {
    /// The panel's raw touch of the measurement: (300, 200) of 1920×1080 device units.
    static let raw = (x: 300.0 / 1920, y: 200.0 / 1080)

    /// What libinput reports for a raw position under a calibration matrix (libinput's own arithmetic).
    static func libinput(_ matrix: [Double], _ x: Double, _ y: Double) -> (x: Double, y: Double) {
        (matrix[0] * x + matrix[1] * y + matrix[2], matrix[3] * x + matrix[4] * y + matrix[5])
    }

    /// The recipe's table in docs/kiosk.md: the udev matrix for each number of `-r`.
    static func documentedMatrices() throws -> [Int: [Double]] {
        let text = try String(
            contentsOf: TestSupport.packageRoot.appendingPathComponent("docs/kiosk.md"), encoding: .utf8)
        var matrices: [Int: [Double]] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `cage") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3 else { continue }
            let turns = cells[0].components(separatedBy: "-r").count - 1
            let matrix = cells[2].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            matrices[turns] =
                matrix == "none" ? CoordinateMapper.identity : matrix.split(separator: " ").compactMap { Double($0) }
        }
        return matrices
    }

    @Test("the table gives libinput's 90°, 180° and 270° matrices for one, two and three -r")
    func table() throws {
        let matrices = try Self.documentedMatrices()
        #expect(matrices.count == 4)
        for rotation in Configuration.Rotation.allCases {
            #expect(matrices[rotation.rawValue / 90] == rotation.matrix, "\(rotation.rawValue)°")
        }
    }

    @Test(
        "with the udev matrix and rotation 0, touchd and cage agree on every turn",
        arguments: [Configuration.Rotation.right, .inverted, .left])
    func agree(_ rotation: Configuration.Rotation) throws {
        let swapped = rotation == .right || rotation == .left
        let (width, height): (Double, Double) = swapped ? (800, 1280) : (1280, 800)
        let udev = rotation.matrix
        // The recipe: libinput turns, touchd does not.
        let recipe = CoordinateMapper(output: Configuration.Output(width: width, height: height, rotation: .normal))
        // Today's touchd-only configuration: touchd turns raw positions itself.
        let today = CoordinateMapper(output: Configuration.Output(width: width, height: height, rotation: rotation))
        for (x, y) in [Self.raw, (0.0, 0.0), (0.9, 0.1), (0.25, 0.75)] {
            let reported = Self.libinput(udev, x, y)
            let seen = try #require(recipe.map(x: reported.x, y: reported.y))
            let before = try #require(today.map(x: x, y: y))
            #expect(abs(seen.x - before.x) < 1e-9 && abs(seen.y - before.y) < 1e-9)
            // Filter mode: touchd writes the twin's raw position (its own mapping and libinput's matrix undone), cage's
            // libinput turns it with the same matrix and cage stretches it onto the turned output.
            let normalised = try #require(recipe.unmap(seen))
            let written = try #require(CoordinateMapper.invert(udev, x: normalised.x, y: normalised.y))
            let delivered = Self.libinput(udev, written.x, written.y)
            #expect(abs(delivered.x * width - seen.x) < 1e-9 && abs(delivered.y * height - seen.y) < 1e-9)
        }
    }

    @Test("the measured touch: touchd's (652, 200) under rotation 90, and cage's (125, 237) without the matrix")
    func measured() throws {
        let output = Configuration.Output(width: 800, height: 1280, rotation: .right)
        let touchd = try #require(CoordinateMapper(output: output).map(x: Self.raw.x, y: Self.raw.y))
        #expect(touchd.x.rounded() == 652 && touchd.y.rounded() == 200)
        // Today cage stretches the raw point: what the page gets.
        #expect((Self.raw.x * 800).rounded() == 125 && (Self.raw.y * 1280).rounded() == 237)
        // With the recipe's matrix for one -r, cage puts it where touchd does.
        let turned = Self.libinput(try #require(try Self.documentedMatrices()[1]), Self.raw.x, Self.raw.y)
        #expect((turned.x * 800).rounded() == 652 && (turned.y * 1280).rounded() == 200)
    }
}
