#ifndef MEISHI_JPEG_H
#define MEISHI_JPEG_H
#include <stddef.h>

/// The most scans a JPEG may have (a progressive photo from a camera or an encoder has about 10),
/// and the longest a decode may take; past either, the decode fails with MEISHI_JPEG_TOO_COSTLY.
#define MEISHI_JPEG_MAX_SCANS 100
#define MEISHI_JPEG_MAX_SECONDS 10
#define MEISHI_JPEG_STRINGIFY_(x) #x
#define MEISHI_JPEG_STRINGIFY(x) MEISHI_JPEG_STRINGIFY_(x)

/// Outcome of meishi_jpeg_decode_gray.
enum meishi_jpeg_status {
    MEISHI_JPEG_OK = 0,
    MEISHI_JPEG_ERROR = 1,      ///< libjpeg reported an error; the message is in `error`
    MEISHI_JPEG_TOO_LARGE = 2,  ///< width x height exceeds max_pixels (checked from the header)
    MEISHI_JPEG_NO_MEMORY = 3,
    MEISHI_JPEG_TOO_COSTLY = 4, ///< more than MEISHI_JPEG_MAX_SCANS scans or MEISHI_JPEG_MAX_SECONDS s; why is in `error`
};

/// Decodes a JPEG held in memory to 8-bit grayscale.
///
/// libjpeg's default error handler calls exit(); this wrapper installs one that longjmps back
/// here, so a corrupt or truncated file is an error return, never the end of the process. A file
/// of more than MEISHI_JPEG_MAX_SCANS scans, or a decode of more than MEISHI_JPEG_MAX_SECONDS s,
/// is MEISHI_JPEG_TOO_COSTLY (`error` says which).
/// A photo whose longer side is at least twice `preferred_side` is shrunk by libjpeg while it is
/// decoded (DCT scaling, 1/2, 1/4 or 1/8, chosen from the header) as far as its longer side stays
/// at least `preferred_side`; 0 decodes at full size.
/// On success *pixels is malloc'd (free it with meishi_jpeg_free) and *width/*height are set.
int meishi_jpeg_decode_gray(const unsigned char *data, size_t length, unsigned long max_pixels,
                            unsigned preferred_side, unsigned char **pixels, unsigned *width,
                            unsigned *height, unsigned *full_width, unsigned *full_height,
                            char *error, size_t error_length);

void meishi_jpeg_free(unsigned char *pixels);

#endif
