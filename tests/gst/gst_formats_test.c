/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's format mapping (gst/formats.c) against GStreamer: every format of the sink's pad template
 * has an edgetensor pixel format, and the layout the C API allocates for it (et_tensor_allocate_image with
 * GStreamer's 4-byte rows) equals gst_video_info_set_format's plane offsets, row strides and size, as the
 * plugin's conversions both ways do. Other formats are refused with a message naming them. C11, C API. */
#include "../capi/capi_check.h"
#include "formats.h"

#include <gst/gst.h>
#include <gst/video/video.h>

#include <stdlib.h>
#include <string.h>

/* The list; the template may hold more (whatever the library's table names). */
static const char* const kRequired[] = {"NV12", "NV21", "I420", "YV12", "YUY2", "UYVY", "RGB", "BGR",
                                        "RGBA", "BGRA", "RGBx", "BGRx", "GRAY8", "GRAY16_LE", "P010_10LE"};
struct size {
  uint32_t w, h;
};
static const struct size kSizes[] = {{1, 1}, {3, 3}, {641, 481}, {1920, 1080}, {4096, 2160}};

/* The formats of the sink's template, in *out (g_ptr_array of static strings). */
static GPtrArray* template_formats(void) {
  GstCaps* caps = et_gst_template_caps();
  const GValue* list = gst_structure_get_value(gst_caps_get_structure(caps, 0), "format");
  GPtrArray* names = g_ptr_array_new();
  for (guint i = 0; list != NULL && i < gst_value_list_get_size(list); ++i)
    g_ptr_array_add(names, (gpointer)g_intern_string(g_value_get_string(gst_value_list_get_value(list, i))));
  gst_caps_unref(caps);
  return names;
}

static int case_template_lists_the_required_formats(void) {
  GPtrArray* names = template_formats();
  int rc = 0;
  for (size_t i = 0; i < sizeof kRequired / sizeof *kRequired; ++i) {
    gboolean found = FALSE;
    for (guint j = 0; j < names->len; ++j) found |= strcmp(g_ptr_array_index(names, j), kRequired[i]) == 0;
    if (!found) {
      fprintf(stderr, "the sink's template lacks %s: %s\n", kRequired[i], et_gst_format_list());
      rc = 1;
    }
  }
  printf("template: %u formats %s\n", names->len, et_gst_format_list());
  g_ptr_array_unref(names);
  return rc;
}

/* One format at one size: the C API's allocated layout, GStreamer's info, and the plugin's conversions. */
static int check_layout(const char* name, struct size s) {
  const GstVideoFormat gst_format = gst_video_format_from_string(name);
  CHECK(gst_format != GST_VIDEO_FORMAT_UNKNOWN);
  int32_t format = 0;
  CHECK(et_gst_pixel_format(gst_format, &format));
  GstVideoInfo info;
  gst_video_info_init(&info);
  CHECK(gst_video_info_set_format(&info, gst_format, s.w, s.h));

  et_image_options image = {0};
  image.struct_size = sizeof image;
  image.row_alignment_bytes = 4; /* GStreamer's default row alignment */
  et_tensor* tensor = NULL;
  CHECK_OK(et_tensor_allocate_image(s.w, s.h, format, &image, NULL, &tensor));
  et_image_layout ours = {0};
  ours.struct_size = sizeof ours;
  et_tensor_info tensor_info = {0};
  tensor_info.struct_size = sizeof tensor_info;
  const et_status got_layout = et_tensor_get_image_layout(tensor, &ours);
  const et_status got_info = et_tensor_get_info(tensor, &tensor_info);
  et_tensor_release(tensor);
  CHECK_OK(got_layout);
  CHECK_OK(got_info);

  int rc = 0;
  if (ours.plane_count != GST_VIDEO_INFO_N_PLANES(&info) || tensor_info.packed_bytes != info.size) {
    fprintf(stderr, "%s %ux%u: %u planes, %llu bytes; GStreamer %u planes, %zu bytes\n", name, s.w, s.h,
            ours.plane_count, (unsigned long long)tensor_info.packed_bytes, GST_VIDEO_INFO_N_PLANES(&info), info.size);
    rc = 1;
  }
  for (guint p = 0; p < ours.plane_count && p < GST_VIDEO_MAX_PLANES; ++p) {
    if (ours.planes[p].offset_bytes != info.offset[p] || ours.planes[p].row_stride_bytes != (uint64_t)info.stride[p]) {
      fprintf(stderr, "%s %ux%u plane %u: offset %llu stride %llu; GStreamer offset %zu stride %d\n", name, s.w, s.h,
              p, (unsigned long long)ours.planes[p].offset_bytes, (unsigned long long)ours.planes[p].row_stride_bytes,
              info.offset[p], info.stride[p]);
      rc = 1;
    }
  }
  /* The plugin's conversions: GstVideoInfo -> layout gives the same layout; layout -> GstVideoInfo gives
   * GStreamer's offsets, strides and size back. */
  et_image_layout converted;
  char* message = NULL;
  CHECK(et_gst_layout_from_info(&info, &converted, &message));
  CHECK(converted.format == ours.format && converted.width == s.w && converted.height == s.h &&
        converted.plane_count == ours.plane_count);
  CHECK(memcmp(converted.planes, ours.planes, sizeof ours.planes) == 0);
  GstVideoInfo back;
  CHECK(et_gst_info_from_layout(&ours, tensor_info.packed_bytes, &back, &message));
  CHECK(GST_VIDEO_INFO_FORMAT(&back) == gst_format && back.size == info.size);
  CHECK(memcmp(back.offset, info.offset, sizeof info.offset) == 0 && memcmp(back.stride, info.stride, sizeof info.stride) == 0);
  return rc;
}

static int case_every_template_format_matches_gst_video_info(void) {
  GPtrArray* names = template_formats();
  int rc = 0, checked = 0;
  for (guint i = 0; i < names->len; ++i)
    for (size_t j = 0; j < sizeof kSizes / sizeof *kSizes; ++j) {
      if (check_layout(g_ptr_array_index(names, i), kSizes[j]) != 0) rc = 1;
      ++checked;
    }
  g_ptr_array_unref(names);
  CHECK(rc == 0);
  printf("%d layouts (every template format x 5 sizes): C API offsets, row strides and sizes equal "
         "gst_video_info_set_format\n", checked);
  return 0;
}

/* A format the table does not map: refused, naming it and what is supported. */
static int case_unmapped_format_is_refused_by_name(void) {
  const GstVideoFormat refused[] = {GST_VIDEO_FORMAT_AYUV, GST_VIDEO_FORMAT_v210, GST_VIDEO_FORMAT_ARGB64};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; ++i) {
    int32_t format = 123;
    CHECK(!et_gst_pixel_format(refused[i], &format));
    CHECK(format == ET_PIXEL_FORMAT_UNKNOWN);
    GstVideoInfo info;
    gst_video_info_init(&info);
    CHECK(gst_video_info_set_format(&info, refused[i], 64, 48));
    et_image_layout layout;
    char* message = NULL;
    CHECK(!et_gst_layout_from_info(&info, &layout, &message));
    CHECK(message != NULL && strstr(message, gst_video_format_to_string(refused[i])) != NULL &&
          strstr(message, "supported: { ") != NULL);
    printf("refused: %s\n", message);
    g_free(message);
  }
  int32_t unknown = 0;
  CHECK(!et_gst_pixel_format(GST_VIDEO_FORMAT_UNKNOWN, &unknown));
  return 0;
}

int main(int argc, char** argv) {
  gst_init(NULL, NULL);
  static const struct test_case cases[] = {
      {"template_lists_the_required_formats", case_template_lists_the_required_formats},
      {"every_template_format_matches_gst_video_info", case_every_template_format_matches_gst_video_info},
      {"unmapped_format_is_refused_by_name", case_unmapped_format_is_refused_by_name},
  };
  return run_cases(cases, sizeof cases / sizeof *cases, argc, argv);
}
