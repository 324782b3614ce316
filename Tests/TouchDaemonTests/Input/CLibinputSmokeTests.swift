import CLibinput
import Glibc
import Testing

/// Proves the module map, the headers and the link flags of `CLibinput` work: each test calls into one of the three
/// libraries. None of them needs a touchscreen or permissions.
@Suite("CLibinput links")
struct CLibinputSmokeTests {
    @Test("a libinput path context is created and destroyed")
    func libinputPathContext() throws {
        // libinput keeps the pointer to the interface for the context's lifetime, so it must not live on the stack of a
        // closure; here it outlives the context by being freed after the last unref.
        let interface = UnsafeMutablePointer<libinput_interface>.allocate(capacity: 1)
        defer { interface.deallocate() }
        interface.initialize(
            to: libinput_interface(
                open_restricted: { path, flags, _ in
                    guard let path else { return -EINVAL }
                    let fd = open(path, flags)
                    return fd < 0 ? -errno : fd
                },
                close_restricted: { fd, _ in
                    _ = close(fd)
                }
            )
        )
        defer { interface.deinitialize(count: 1) }

        let context = try #require(libinput_path_create_context(interface, nil))
        // libinput_unref returns NULL once the last reference is gone and the context is destroyed.
        #expect(libinput_unref(context) == nil)
    }

    @Test("a udev context is created and destroyed")
    func udevContext() throws {
        let udev = try #require(udev_new())
        #expect(udev_unref(udev) == nil)
    }

    @Test("a libevdev device is created and freed")
    func libevdevDevice() throws {
        let device = try #require(libevdev_new())
        libevdev_set_name(device, "touchd smoke test")
        #expect(String(cString: libevdev_get_name(device)) == "touchd smoke test")
        libevdev_free(device)
    }
}
