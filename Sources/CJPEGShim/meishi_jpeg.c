// A setjmp wrapper around libjpeg-turbo's decoder: Swift cannot call setjmp, and libjpeg's
// default error_exit handler terminates the process.
#include "meishi_jpeg.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jpeglib.h>

struct meishi_error_mgr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char *message;
    size_t message_length;
};

static void meishi_error_exit(j_common_ptr cinfo) {
    struct meishi_error_mgr *err = (struct meishi_error_mgr *)cinfo->err;
    if (err->message && err->message_length > 0) {
        char buffer[JMSG_LENGTH_MAX];
        (*cinfo->err->format_message)(cinfo, buffer);
        snprintf(err->message, err->message_length, "%s", buffer);
    }
    longjmp(err->jump, 1);
}

/// Called by libjpeg while it decodes (once per row of blocks, in every scan): ends a file of more
/// than MEISHI_JPEG_MAX_SCANS scans, or a decode past its deadline, through the error jump. A
/// progressive JPEG may repeat scans that each walk every block of the image: 15,000 scans of
/// 93 bytes over 7000x7000 pixels took 101 s before this bound (issue 22, finding 7).
struct meishi_progress_mgr {
    struct jpeg_progress_mgr pub;
    struct timespec deadline;
};

static void meishi_progress(j_common_ptr cinfo) {
    struct meishi_progress_mgr *progress = (struct meishi_progress_mgr *)cinfo->progress;
    struct meishi_error_mgr *err = (struct meishi_error_mgr *)cinfo->err;
    const char *why = NULL;
    struct timespec now;
    if (cinfo->is_decompressor && ((j_decompress_ptr)cinfo)->input_scan_number > MEISHI_JPEG_MAX_SCANS) {
        why = "progressive JPEG with more than " MEISHI_JPEG_STRINGIFY(MEISHI_JPEG_MAX_SCANS) " scans";
    } else if (clock_gettime(CLOCK_MONOTONIC, &now) == 0
               && (now.tv_sec > progress->deadline.tv_sec
                   || (now.tv_sec == progress->deadline.tv_sec && now.tv_nsec > progress->deadline.tv_nsec))) {
        why = "decoding took more than " MEISHI_JPEG_STRINGIFY(MEISHI_JPEG_MAX_SECONDS) " s";
    }
    if (!why) return;
    if (err->message && err->message_length > 0) snprintf(err->message, err->message_length, "%s", why);
    longjmp(err->jump, 2);
}

static void meishi_output_message(j_common_ptr cinfo) {
    (void)cinfo;  // warnings are not printed on stderr
}

int meishi_jpeg_decode_gray(const unsigned char *data, size_t length, unsigned long max_pixels,
                            unsigned preferred_side, unsigned char **pixels, unsigned *width,
                            unsigned *height, unsigned *full_width, unsigned *full_height,
                            char *error, size_t error_length) {
    struct jpeg_decompress_struct cinfo;
    struct meishi_error_mgr jerr;
    struct meishi_progress_mgr progress;
    unsigned char *volatile out = NULL;

    *pixels = NULL;
    memset(&cinfo, 0, sizeof(cinfo));
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = meishi_error_exit;
    jerr.pub.output_message = meishi_output_message;
    jerr.message = error;
    jerr.message_length = error_length;
    int jumped = setjmp(jerr.jump);
    if (jumped) {
        jpeg_destroy_decompress(&cinfo);
        free(out);
        return jumped == 2 ? MEISHI_JPEG_TOO_COSTLY : MEISHI_JPEG_ERROR;
    }
    jpeg_create_decompress(&cinfo);
    memset(&progress, 0, sizeof(progress));
    progress.pub.progress_monitor = meishi_progress;
    clock_gettime(CLOCK_MONOTONIC, &progress.deadline);
    progress.deadline.tv_sec += MEISHI_JPEG_MAX_SECONDS;
    cinfo.progress = &progress.pub;
    jpeg_mem_src(&cinfo, data, (unsigned long)length);
    jpeg_read_header(&cinfo, TRUE);
    *full_width = cinfo.image_width;
    *full_height = cinfo.image_height;
    if ((unsigned long)cinfo.image_width * (unsigned long)cinfo.image_height > max_pixels) {
        jpeg_destroy_decompress(&cinfo);
        return MEISHI_JPEG_TOO_LARGE;
    }
    cinfo.out_color_space = JCS_GRAYSCALE;
    unsigned longest = cinfo.image_width > cinfo.image_height ? cinfo.image_width : cinfo.image_height;
    unsigned denom = 1;
    while (preferred_side > 0 && denom < 8 && longest / (denom * 2) >= preferred_side) denom *= 2;
    cinfo.scale_num = 1;
    cinfo.scale_denom = denom;
    jpeg_start_decompress(&cinfo);
    size_t stride = cinfo.output_width;
    out = malloc(stride * cinfo.output_height);
    if (!out) {
        jpeg_destroy_decompress(&cinfo);
        return MEISHI_JPEG_NO_MEMORY;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = out + stride * cinfo.output_scanline;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    *width = cinfo.output_width;
    *height = cinfo.output_height;
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    *pixels = out;
    return MEISHI_JPEG_OK;
}

void meishi_jpeg_free(unsigned char *pixels) { free(pixels); }
