#pragma once
// dav1d (AV1 decoder, Debian libdav1d-dev) for `recbot verify`. Its error codes are
// negative errno values built with a macro Swift cannot import.
#include <errno.h>
#include <dav1d/dav1d.h>

static inline int recbot_dav1d_eagain(void) { return DAV1D_ERR(EAGAIN); }
