// The C surface of `touchd calibrate`'s screen: libdrm's KMS calls and the dumb-buffer ioctls, whose request numbers
// are macros Swift cannot import. Only Sources/TouchDaemon/Calibration/DRMScreen.swift imports this module.
#ifndef TOUCHD_CDRM_SHIM_H
#define TOUCHD_CDRM_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// pkg-config adds -I/usr/include/libdrm for these.
#include <xf86drm.h>
#include <xf86drmMode.h>

/// One connected display driven with one dumb buffer (32-bit XRGB), and the CRTC state to restore.
struct touchd_drm_screen {
    int fd;
    uint32_t width, height, pitch;
    uint32_t *pixels;
    uint64_t size;
    uint32_t handle, framebuffer, crtc, connector;
    drmModeCrtcPtr saved;
    drmModeModeInfo mode;
};

/// Opens `path`, takes the first connected connector's preferred mode and a CRTC for it, makes a dumb buffer of that
/// size and maps it. 0 on success; otherwise -errno, with what failed written to `why`. Shows nothing yet.
static inline int touchd_drm_open(const char *path, struct touchd_drm_screen *screen, char *why, size_t whySize) {
    memset(screen, 0, sizeof *screen);
    screen->fd = -1;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int saved = errno;
        snprintf(why, whySize, "cannot open %s: %s", path, strerror(saved));
        return -saved;
    }
    screen->fd = fd;
    uint64_t dumb = 0;
    if (drmGetCap(fd, DRM_CAP_DUMB_BUFFER, &dumb) < 0 || !dumb) {
        snprintf(why, whySize, "%s has no dumb buffers", path);
        close(fd);
        screen->fd = -1;
        return -ENOTSUP;
    }
    drmModeResPtr resources = drmModeGetResources(fd);
    if (!resources) {
        int saved = errno;
        snprintf(why, whySize, "%s: no KMS resources: %s", path, strerror(saved));
        close(fd);
        screen->fd = -1;
        return -(saved ? saved : ENODEV);
    }
    int found = 0;
    for (int i = 0; i < resources->count_connectors && !found; i++) {
        drmModeConnectorPtr connector = drmModeGetConnector(fd, resources->connectors[i]);
        if (!connector) continue;
        if (connector->connection == DRM_MODE_CONNECTED && connector->count_modes > 0) {
            screen->mode = connector->modes[0];
            for (int m = 0; m < connector->count_modes; m++) {
                if (connector->modes[m].type & DRM_MODE_TYPE_PREFERRED) {
                    screen->mode = connector->modes[m];
                    break;
                }
            }
            screen->connector = connector->connector_id;
            // The CRTC the connector's encoder drives now, else the first one any of its encoders can drive.
            uint32_t crtc = 0;
            if (connector->encoder_id) {
                drmModeEncoderPtr encoder = drmModeGetEncoder(fd, connector->encoder_id);
                if (encoder) {
                    crtc = encoder->crtc_id;
                    drmModeFreeEncoder(encoder);
                }
            }
            for (int e = 0; e < connector->count_encoders && !crtc; e++) {
                drmModeEncoderPtr encoder = drmModeGetEncoder(fd, connector->encoders[e]);
                if (!encoder) continue;
                for (int c = 0; c < resources->count_crtcs; c++) {
                    if (encoder->possible_crtcs & (1u << c)) {
                        crtc = resources->crtcs[c];
                        break;
                    }
                }
                drmModeFreeEncoder(encoder);
            }
            if (crtc) {
                screen->crtc = crtc;
                found = 1;
            }
        }
        drmModeFreeConnector(connector);
    }
    drmModeFreeResources(resources);
    if (!found) {
        snprintf(why, whySize, "%s: no connected display with a mode and a CRTC", path);
        close(fd);
        screen->fd = -1;
        return -ENODEV;
    }
    screen->width = screen->mode.hdisplay;
    screen->height = screen->mode.vdisplay;
    struct drm_mode_create_dumb create = {.width = screen->width, .height = screen->height, .bpp = 32};
    if (drmIoctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &create) < 0) {
        int saved = errno;
        snprintf(why, whySize, "%s: cannot create a dumb buffer: %s", path, strerror(saved));
        close(fd);
        screen->fd = -1;
        return -saved;
    }
    screen->handle = create.handle;
    screen->pitch = create.pitch;
    screen->size = create.size;
    if (drmModeAddFB(fd, screen->width, screen->height, 24, 32, screen->pitch, screen->handle, &screen->framebuffer)) {
        int saved = errno;
        snprintf(why, whySize, "%s: cannot add a framebuffer: %s", path, strerror(saved));
        struct drm_mode_destroy_dumb destroy = {.handle = screen->handle};
        drmIoctl(fd, DRM_IOCTL_MODE_DESTROY_DUMB, &destroy);
        close(fd);
        screen->fd = -1;
        return -saved;
    }
    struct drm_mode_map_dumb map = {.handle = screen->handle};
    void *pixels = MAP_FAILED;
    if (drmIoctl(fd, DRM_IOCTL_MODE_MAP_DUMB, &map) == 0) {
        pixels = mmap(0, screen->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, map.offset);
    }
    if (pixels == MAP_FAILED) {
        int saved = errno;
        snprintf(why, whySize, "%s: cannot map the dumb buffer: %s", path, strerror(saved));
        drmModeRmFB(fd, screen->framebuffer);
        struct drm_mode_destroy_dumb destroy = {.handle = screen->handle};
        drmIoctl(fd, DRM_IOCTL_MODE_DESTROY_DUMB, &destroy);
        close(fd);
        screen->fd = -1;
        return -saved;
    }
    screen->pixels = pixels;
    memset(pixels, 0, screen->size);
    screen->saved = drmModeGetCrtc(fd, screen->crtc);
    return 0;
}

/// Scans the buffer out on the display. Fails (EACCES) when another process is DRM master: a compositor runs.
static inline int touchd_drm_show(struct touchd_drm_screen *screen, char *why, size_t whySize) {
    if (drmModeSetCrtc(screen->fd, screen->crtc, screen->framebuffer, 0, 0, &screen->connector, 1, &screen->mode)) {
        int saved = errno;
        snprintf(why, whySize, "cannot show a picture: %s (a compositor or another program holds the display)",
                 strerror(saved));
        return -saved;
    }
    return 0;
}

/// Tells the driver the buffer changed (needed by drivers that copy it, such as virtio-gpu); errors are harmless.
static inline void touchd_drm_flush(struct touchd_drm_screen *screen) {
    drmModeDirtyFB(screen->fd, screen->framebuffer, NULL, 0);
}

/// Puts back what the display showed, and frees everything.
static inline void touchd_drm_close(struct touchd_drm_screen *screen) {
    if (screen->fd < 0) return;
    if (screen->saved) {
        drmModeCrtcPtr old = screen->saved;
        if (old->mode_valid) {
            drmModeSetCrtc(screen->fd, old->crtc_id, old->buffer_id, old->x, old->y, &screen->connector, 1,
                           &old->mode);
        } else {
            drmModeSetCrtc(screen->fd, old->crtc_id, 0, 0, 0, NULL, 0, NULL);
        }
        drmModeFreeCrtc(old);
        screen->saved = NULL;
    }
    if (screen->pixels) munmap(screen->pixels, screen->size);
    screen->pixels = NULL;
    drmModeRmFB(screen->fd, screen->framebuffer);
    struct drm_mode_destroy_dumb destroy = {.handle = screen->handle};
    drmIoctl(screen->fd, DRM_IOCTL_MODE_DESTROY_DUMB, &destroy);
    close(screen->fd);
    screen->fd = -1;
}

#endif
