// SPDX-License-Identifier: Apache-2.0
// GStreamer as the image layout oracle: a producer no one here wrote answers for the same
// formats and sizes. For 22 formats at 1x1, 3x3, 641x481, 1920x1080 and 4096x2160:
//   - ImageLayout::make with 4-byte rows equals gst_video_info_set_format (offsets, strides) and
//     allocation_bytes equals GstVideoInfo.size; with the height aligned to 16 it equals the same call
//     padded at the bottom by gst_video_info_align;
//   - layouts padded by gst_video_info_align (padding on every side, stride alignment) validate against
//     GstVideoInfo.size;
//   - our table's planes, subsampling, pixel strides, sample byte positions and depth equal
//     gst_video_format_get_info's, so sample order ("UV" / "VU", "BGRA") is proven by GStreamer too.
// Public API only, linked against the shared library; test-only dependency: gstreamer-video-1.0.
#include <edgetensor/edgetensor.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

using namespace edgetensor;

namespace {

// The list, by GStreamer name.
const char* const kFormats[] = {"NV12", "NV21", "I420", "YV12", "NV16",  "NV61",     "NV24",     "Y42B",
                                "YUY2", "YVYU", "UYVY", "VYUY", "RGB",   "BGR",      "RGBA",     "BGRA",
                                "RGBx", "BGRx", "GRAY8", "GRAY16_LE", "P010_10LE", "RGBP"};
struct Size {
  std::uint32_t w, h;
};
const Size kSizes[] = {{1, 1}, {3, 3}, {641, 481}, {1920, 1080}, {4096, 2160}};
constexpr std::size_t kFormatCount = std::size(kFormats);
constexpr std::size_t kSizeCount = std::size(kSizes);

std::string gst_version_text() {
  guint major = 0, minor = 0, micro = 0, nano = 0;
  ::gst_version(&major, &minor, &micro, &nano);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(micro);
}

std::string trace(const char* name, Size s) { return std::string(name) + " " + std::to_string(s.w) + "x" + std::to_string(s.h); }

PixelFormat ours(const char* gst_name) {
  auto f = pixel_format_from_gst(gst_name);
  EXPECT_TRUE(f.has_value()) << gst_name;
  return f.value_or(PixelFormat::Unknown);
}

GstVideoFormat theirs(const char* gst_name) {
  const GstVideoFormat f = gst_video_format_from_string(gst_name);
  EXPECT_NE(f, GST_VIDEO_FORMAT_UNKNOWN) << gst_name;
  return f;
}

// GStreamer's default info for `name` at `s` (gst_video_info_set_format); false where it refuses.
bool gst_info(const char* name, Size s, GstVideoInfo* info) {
  gst_video_info_init(info);
  return gst_video_info_set_format(info, theirs(name), s.w, s.h);
}

// Our layout with GStreamer's offsets and strides.
ImageLayout from_gst(const GstVideoInfo& info, PixelFormat format, Size s) {
  ImageLayout l;
  l.format = format;
  l.width = s.w;
  l.height = s.h;
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info); ++p)
    l.planes[p] = {info.offset[p], static_cast<std::size_t>(info.stride[p])};
  return l;
}

void expect_equal(const ImageLayout& l, const GstVideoInfo& info) {
  ASSERT_EQ(l.plane_count(), GST_VIDEO_INFO_N_PLANES(&info));
  for (std::size_t p = 0; p < l.plane_count(); ++p) {
    EXPECT_EQ(l.planes[p].offset_bytes, info.offset[p]) << "plane " << p;
    EXPECT_EQ(l.planes[p].row_stride_bytes, static_cast<std::size_t>(info.stride[p])) << "plane " << p;
  }
}

// GStreamer's component index of one of our sample letters (GST_VIDEO_COMP_Y/U/V/A, _R/G/B/A); -1 for
// padding.
int component(char letter) {
  switch (letter) {
    case 'Y': case 'R': return 0;
    case 'U': case 'G': return 1;
    case 'V': case 'B': return 2;
    case 'A': return 3;
    default: return -1;
  }
}

int log2_of(int v) { return v == 1 ? 0 : v == 2 ? 1 : v == 4 ? 2 : -1; }

TEST(Oracle, OurGstNamesAreGstreamersAndOnlyThose) {
  std::set<std::string> ours_named;
  for (const auto& r : pixel_formats()) {
    if (r.gst_name.empty()) continue;
    ours_named.insert(std::string(r.gst_name));
    const GstVideoFormat f = gst_video_format_from_string(std::string(r.gst_name).c_str());
    EXPECT_NE(f, GST_VIDEO_FORMAT_UNKNOWN) << r.gst_name;
    EXPECT_EQ(std::string(gst_video_format_to_string(f)), r.gst_name);
  }
  EXPECT_EQ(ours_named, std::set<std::string>(std::begin(kFormats), std::end(kFormats)));
  // Rows without a GStreamer name: GStreamer has none for them (NV42; planar RGBA in R, G, B, A order).
  EXPECT_EQ(gst_video_format_from_string("NV42"), GST_VIDEO_FORMAT_UNKNOWN);
}

// Where one of our samples sits: plane, byte in the plane's row for pixel x, and the table row of it.
struct SamplePlace {
  std::size_t plane;
  std::size_t byte;
  const PlaneFormat* format;
};
// The sample of GStreamer component `c` for pixel `x` (0 on row 0), as our table lays it out; false when
// our table has no such sample.
bool place_of(const PixelFormatInfo& t, int c, std::size_t x, SamplePlace* out) {
  for (std::size_t p = 0; p < t.plane_count; ++p) {
    const PlaneFormat& pf = t.planes[p];
    const std::size_t xp = x / pf.h_subsampling, group = xp / pf.pixels_per_group, j = xp % pf.pixels_per_group;
    std::size_t nth = 0;  // packed 4:2:2 holds one Y per pixel of the group, one U and one V for all
    const std::size_t occurrences = static_cast<std::size_t>(std::count_if(
        pf.samples.begin(), pf.samples.end(), [&](char l) { return component(l) == c; }));
    for (std::size_t k = 0; k < pf.samples.size(); ++k) {
      if (component(pf.samples[k]) != c) continue;
      if (occurrences == 1 || nth++ == j) {
        *out = {p, group * pf.bytes_per_group + k * pf.bits_per_sample / 8, &pf};
        return true;
      }
    }
  }
  return false;
}

// GStreamer 1.22's GstVideoFormatInfo.poffset disagrees with GStreamer's own unpack functions (which
// read the bytes our table names; UnpackReadsTheBytesOurTableNames) for these components: VYUY lists
// UYVY's offsets (U at byte 0, V at 2), and the 16-bit semi-planar formats give V at 1 where their
// 4-byte UV pairs hold it at byte 2 (AYUV64 shows poffset counts bytes). Seen with 1.22.0; tolerated,
// not required, so a GStreamer that fixes them passes too.
bool known_gst_poffset_defect(const char* name, int c) {
  const std::string n = name;
  return (n == "VYUY" && (c == 1 || c == 2)) || (n == "P010_10LE" && c == 2);
}

TEST(Oracle, FormatInfoMatchesOurTable) {
  int checked_components = 0;
  std::string tolerated;
  for (const char* name : kFormats) {
    SCOPED_TRACE(name);
    const GstVideoFormatInfo* g = gst_video_format_get_info(theirs(name));
    ASSERT_NE(g, nullptr);
    const PixelFormatInfo& t = pixel_format_info(ours(name));
    ASSERT_EQ(t.plane_count, g->n_planes);
    std::set<int> seen;
    for (std::size_t p = 0; p < t.plane_count; ++p) {
      const PlaneFormat& pf = t.planes[p];
      const int sample_bytes = pf.bits_per_sample / 8;
      for (std::size_t k = 0; k < pf.samples.size(); ++k) {
        const int c = component(pf.samples[k]);
        if (c < 0 || seen.count(c)) continue;  // padding, or a later sample of the same component
        seen.insert(c);
        SCOPED_TRACE(std::string("sample ") + pf.samples[k] + " of plane " + std::to_string(p));
        ASSERT_LT(static_cast<guint>(c), g->n_components);
        const int occurrences = static_cast<int>(std::count(pf.samples.begin(), pf.samples.end(), pf.samples[k]));
        EXPECT_EQ(g->plane[c], p);
        if (g->poffset[c] != k * sample_bytes && known_gst_poffset_defect(name, c)) {
          tolerated += std::string(tolerated.empty() ? "" : ", ") + name + " " + pf.samples[k] + " at " +
                       std::to_string(g->poffset[c]);
        } else {
          EXPECT_EQ(g->poffset[c], k * sample_bytes) << "byte position in its group";
        }
        EXPECT_EQ(g->pixel_stride[c], pf.bytes_per_group / occurrences);
        EXPECT_EQ(static_cast<int>(g->w_sub[c]), log2_of(pf.h_subsampling * pf.pixels_per_group / occurrences));
        EXPECT_EQ(static_cast<int>(g->h_sub[c]), log2_of(pf.v_subsampling));
        EXPECT_EQ(g->depth[c], pf.significant_bits);
        EXPECT_EQ(g->shift[c], static_cast<guint>(pf.bits_per_sample - pf.significant_bits)) << "value in the top bits";
        if (pf.bits_per_sample == 16) {
          EXPECT_TRUE(GST_VIDEO_FORMAT_INFO_IS_LE(g)) << "16-bit samples are little-endian";
        }
        ++checked_components;
      }
    }
    EXPECT_EQ(seen.size(), g->n_components) << "every GStreamer component is one of our samples";
  }
  if (!::testing::Test::HasFailure())
    std::printf("gst oracle (GStreamer %s): %zu formats' planes, subsampling, pixel strides, byte positions and depth "
                "(%d components) equal gst_video_format_get_info (GStreamer's own poffset defects tolerated: %s)\n",
                gst_version_text().c_str(), kFormatCount, checked_components,
                tolerated.empty() ? "none" : tolerated.c_str());
}

// GStreamer's unpack function reads a row the way GStreamer lays the format out: four pixels of a row
// whose every byte differs come back as (A, Y, U, V) or (A, R, G, B), each equal to the sample our table
// puts at that byte (16-bit samples: their value bits).
TEST(Oracle, UnpackReadsTheBytesOurTableNames) {
  constexpr std::size_t kPixels = 4;
  int checked = 0;
  for (const char* name : kFormats) {
    SCOPED_TRACE(name);
    const GstVideoFormatInfo* g = gst_video_format_get_info(theirs(name));
    const PixelFormatInfo& t = pixel_format_info(ours(name));
    std::array<std::array<guint8, 64>, GST_VIDEO_MAX_PLANES> rows{};
    gpointer data[GST_VIDEO_MAX_PLANES];
    gint strides[GST_VIDEO_MAX_PLANES];
    for (std::size_t p = 0; p < GST_VIDEO_MAX_PLANES; ++p) {
      for (std::size_t i = 0; i < rows[p].size(); ++i) rows[p][i] = static_cast<guint8>(p * 64 + i);
      data[p] = rows[p].data();
      strides[p] = static_cast<gint>(rows[p].size());
    }
    const bool wide = GST_VIDEO_FORMAT_INFO_BITS(g) > 8;  // unpacks to AYUV64 / ARGB64
    std::array<guint16, kPixels * 4> unpacked{};
    std::array<guint8, kPixels * 4> unpacked8{};
    g->unpack_func(g, GST_VIDEO_PACK_FLAG_NONE, wide ? static_cast<gpointer>(unpacked.data()) : unpacked8.data(),
                   data, strides, 0, 0, kPixels);
    for (std::size_t x = 0; x < kPixels; ++x)
      for (int c = 0; c < static_cast<int>(g->n_components); ++c) {
        SCOPED_TRACE("pixel " + std::to_string(x) + " component " + std::to_string(c));
        SamplePlace at{};
        ASSERT_TRUE(place_of(t, c, x, &at));
        const std::size_t out = x * 4 + (c == 3 ? 0 : c + 1);  // A first, then Y U V / R G B
        if (!wide) {
          EXPECT_EQ(unpacked8[out], rows[at.plane][at.byte]) << "plane " << at.plane << " byte " << at.byte;
        } else {
          const unsigned raw = rows[at.plane][at.byte] | (rows[at.plane][at.byte + 1] << 8);  // little-endian
          const unsigned bits = at.format->significant_bits;
          EXPECT_EQ(unpacked[out] >> (16 - bits), raw >> (at.format->bits_per_sample - bits))
              << "plane " << at.plane << " bytes " << at.byte << ", " << at.byte + 1;
        }
        ++checked;
      }
  }
  if (!::testing::Test::HasFailure())
    std::printf("gst oracle (GStreamer %s): %zu formats' unpack functions read every sample of 4 pixels (%d) from "
                "the bytes our table names\n",
                gst_version_text().c_str(), kFormatCount, checked);
}

TEST(Oracle, DefaultLayoutEqualsGstVideoInfo) {
  int checked = 0;
  for (const char* name : kFormats)
    for (Size s : kSizes) {
      SCOPED_TRACE(trace(name, s));
      GstVideoInfo info;
      ASSERT_TRUE(gst_info(name, s, &info));
      auto l = ImageLayout::make(s.w, s.h, ours(name), ImageAlignment::gstreamer());
      ASSERT_TRUE(l.has_value()) << l.error().to_string();
      expect_equal(*l, info);
      auto alloc = ImageLayout::allocation_bytes(s.w, s.h, ours(name), ImageAlignment::gstreamer());
      ASSERT_TRUE(alloc.has_value());
      EXPECT_EQ(*alloc, info.size) << "allocation_bytes vs GstVideoInfo.size";
      EXPECT_TRUE(l->validate(info.size).has_value());
      EXPECT_TRUE(from_gst(info, ours(name), s).validate(info.size).has_value());
      ++checked;
    }
  if (!::testing::Test::HasFailure())
    std::printf("gst oracle (GStreamer %s): %zu formats x %zu sizes = %d layouts: ImageLayout::make(4-byte rows) "
              "offsets and strides equal gst_video_info_set_format, allocation_bytes equals GstVideoInfo.size\n",
              gst_version_text().c_str(), kFormatCount, kSizeCount, checked);
  EXPECT_EQ(static_cast<std::size_t>(checked), kFormatCount * kSizeCount);
}

TEST(Oracle, HeightAlignmentEqualsGstBottomPadding) {
  int checked = 0;
  for (const char* name : kFormats)
    for (Size s : kSizes) {
      SCOPED_TRACE(trace(name, s));
      GstVideoInfo info;
      ASSERT_TRUE(gst_info(name, s, &info));
      GstVideoAlignment align;
      gst_video_alignment_reset(&align);
      align.padding_bottom = (s.h + 15) / 16 * 16 - s.h;
      ASSERT_TRUE(gst_video_info_align(&info, &align));
      auto l = ImageLayout::make(s.w, s.h, ours(name), {.row_bytes = 4, .height = 16});
      ASSERT_TRUE(l.has_value()) << l.error().to_string();
      expect_equal(*l, info);
      EXPECT_EQ(*ImageLayout::allocation_bytes(s.w, s.h, ours(name), {.row_bytes = 4, .height = 16}), info.size);
      ++checked;
    }
  if (!::testing::Test::HasFailure())
    std::printf("gst oracle (GStreamer %s): %zu formats x %zu sizes = %d layouts with the height aligned to 16 equal "
              "gst_video_info_align's bottom padding (offsets, strides, size)\n",
              gst_version_text().c_str(), kFormatCount, kSizeCount, checked);
  EXPECT_EQ(static_cast<std::size_t>(checked), kFormatCount * kSizeCount);
}

// Padding for gst_video_info_align; stride_align is a mask (63 = 64-byte strides).
struct Padding {
  guint top, bottom, left, right, stride_align;
};

std::string trace(const char* name, Size s, const Padding& pad) {
  return trace(name, s) + " padding " + std::to_string(pad.top) + "/" + std::to_string(pad.bottom) + "/" +
         std::to_string(pad.left) + "/" + std::to_string(pad.right) + " stride mask " +
         std::to_string(pad.stride_align);
}

// GStreamer's info for `name` at `s`, padded by gst_video_info_align with `pad` on every plane.
bool padded_info(const char* name, Size s, const Padding& pad, GstVideoInfo* info) {
  if (!gst_info(name, s, info)) return false;
  GstVideoAlignment align;
  gst_video_alignment_reset(&align);
  align.padding_top = pad.top;
  align.padding_bottom = pad.bottom;
  align.padding_left = pad.left;
  align.padding_right = pad.right;
  for (guint p = 0; p < GST_VIDEO_MAX_PLANES; ++p) align.stride_align[p] = pad.stride_align;
  return gst_video_info_align(info, &align);
}

TEST(Oracle, GstPaddedLayoutsValidateAgainstGstSize) {
  const Padding paddings[] = {{0, 0, 0, 32, 0}, {0, 8, 0, 0, 0}, {0, 0, 0, 0, 63}, {2, 6, 16, 16, 63}, {16, 0, 0, 64, 255}};
  int checked = 0;
  for (const char* name : kFormats)
    for (Size s : kSizes)
      for (const Padding& pad : paddings) {
        SCOPED_TRACE(trace(name, s, pad));
        GstVideoInfo info;
        ASSERT_TRUE(padded_info(name, s, pad, &info));
        ASSERT_EQ(static_cast<std::uint32_t>(GST_VIDEO_INFO_WIDTH(&info)), s.w);
        ASSERT_EQ(static_cast<std::uint32_t>(GST_VIDEO_INFO_HEIGHT(&info)), s.h);
        const ImageLayout l = from_gst(info, ours(name), s);
        auto ok = l.validate(info.size);
        EXPECT_TRUE(ok.has_value()) << ok.error().to_string();
        auto min = l.min_buffer_bytes();
        ASSERT_TRUE(min.has_value());
        EXPECT_LE(*min, info.size);
        for (std::size_t p = 0; p < l.plane_count(); ++p) {
          EXPECT_EQ(l.planes[p].row_stride_bytes & pad.stride_align, 0u) << "plane " << p;
        }
        ++checked;
      }
  if (!::testing::Test::HasFailure())
    std::printf("gst oracle (GStreamer %s): %zu formats x %zu sizes x %zu paddings = %d gst_video_info_align layouts "
              "validate against GstVideoInfo.size\n",
              gst_version_text().c_str(), kFormatCount, kSizeCount, std::size(paddings), checked);
  EXPECT_EQ(static_cast<std::size_t>(checked), kFormatCount * kSizeCount * std::size(paddings));
}

// GStreamer 1.22's VYUY unpack reads the last pixel of an odd-width row with U and V swapped (its full
// groups are right: the same bytes as our table, and as UnpackReadsTheBytesOurTableNames shows); the
// defect is checked to be exactly that swap, not tolerated as any difference.
bool known_gst_vyuy_tail_defect(const char* name, std::uint32_t width, std::size_t x, int c) {
  return std::string(name) == "VYUY" && width % 2 == 1 && x + 1 == width && (c == 1 || c == 2);
}

// A layout padded by gst_video_info_align, over a buffer of GstVideoInfo.size filled with a pattern: for
// every pixel of every row and every component, GStreamer's unpack function (reading the buffer through
// GstVideoInfo's offsets and strides) and our plane views (TensorDyn::plane, mapped, rows stepped by the
// view's own stride) give the same sample. The padding is real bytes of the pattern, so a view that
// started in the padding or stepped by the wrong stride would read other values.
TEST(Oracle, GstPaddedFramesReadTheSameSamplesThroughPlaneViews) {
  const Size sizes[] = {{3, 3}, {641, 481}};
  const Padding paddings[] = {{0, 8, 0, 32, 0}, {2, 6, 16, 16, 63}, {16, 0, 0, 64, 255}};
  long long samples = 0, tolerated = 0;
  int frames = 0;
  for (const char* name : kFormats)
    for (Size s : sizes)
      for (const Padding& pad : paddings) {
        SCOPED_TRACE(trace(name, s, pad));
        GstVideoInfo info;
        ASSERT_TRUE(padded_info(name, s, pad, &info));
        auto t = TensorDyn::allocate({info.size}, DType::U8);
        ASSERT_TRUE(t.has_value()) << t.error().to_string();
        std::vector<guint8> bytes(info.size);
        for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<guint8>((i * 2654435761u) >> 13);
        {
          auto m = t->map_write();
          ASSERT_TRUE(m.has_value());
          std::copy(bytes.begin(), bytes.end(), reinterpret_cast<guint8*>(m->bytes().data()));
        }
        const PixelFormatInfo& table = pixel_format_info(ours(name));
        auto set = t->set_image_layout(from_gst(info, ours(name), s));
        ASSERT_TRUE(set.has_value()) << set.error().to_string();
        // Our side: each plane view's mapped bytes and its row stride (the view's strides[0]).
        std::vector<TensorDyn> views;
        std::vector<ReadMap> maps;
        for (std::size_t p = 0; p < table.plane_count; ++p) {
          auto v = t->plane(p);
          ASSERT_TRUE(v.has_value()) << v.error().to_string();
          auto m = v->map_read();
          ASSERT_TRUE(m.has_value()) << m.error().to_string();
          views.push_back(*v);
          maps.push_back(std::move(*m));
        }
        // GStreamer's side: its unpack function over the same bytes at its own offsets and strides.
        const GstVideoFormatInfo* g = info.finfo;
        const bool wide = GST_VIDEO_FORMAT_INFO_BITS(g) > 8;
        gpointer data[GST_VIDEO_MAX_PLANES] = {};
        gint strides[GST_VIDEO_MAX_PLANES] = {};
        for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info); ++p) {
          data[p] = bytes.data() + info.offset[p];
          strides[p] = info.stride[p];
        }
        std::vector<guint16> row16(s.w * 4 + 8);
        std::vector<guint8> row8(s.w * 4 + 8);
        std::string first_mismatch;
        long long mismatches = 0;
        for (std::uint32_t y = 0; y < s.h; ++y) {
          g->unpack_func(g, GST_VIDEO_PACK_FLAG_NONE, wide ? static_cast<gpointer>(row16.data()) : row8.data(), data,
                         strides, 0, static_cast<gint>(y), static_cast<gint>(s.w));
          for (std::size_t x = 0; x < s.w; ++x)
            for (int c = 0; c < static_cast<int>(g->n_components); ++c) {
              SamplePlace at{};
              ASSERT_TRUE(place_of(table, c, x, &at));
              const std::size_t row = y / at.format->v_subsampling;
              const auto& view = views[at.plane];
              ASSERT_LT(row, view.shape()[0]);
              const auto* ours_row =
                  reinterpret_cast<const guint8*>(maps[at.plane].bytes().data()) + row * view.strides()[0];
              const std::size_t out = x * 4 + (c == 3 ? 0 : c + 1);
              unsigned mine = 0, theirs_value = 0;
              if (!wide) {
                mine = ours_row[at.byte];
                theirs_value = row8[out];
              } else {
                const unsigned bits = at.format->significant_bits;
                mine = (ours_row[at.byte] | (ours_row[at.byte + 1] << 8)) >> (at.format->bits_per_sample - bits);
                theirs_value = row16[out] >> (16 - bits);
              }
              ++samples;
              if (mine != theirs_value && known_gst_vyuy_tail_defect(name, s.w, x, c)) {
                // Tolerated only as exactly that defect: GStreamer read the other chroma sample.
                SamplePlace other{};
                ASSERT_TRUE(place_of(table, c == 1 ? 2 : 1, x, &other));
                if (ours_row[other.byte] == theirs_value) {
                  ++tolerated;
                  continue;
                }
              }
              if (mine != theirs_value && mismatches++ == 0)
                first_mismatch = "pixel " + std::to_string(x) + "," + std::to_string(y) + " component " +
                                 std::to_string(c) + ": plane view " + std::to_string(mine) + ", GStreamer " +
                                 std::to_string(theirs_value);
            }
        }
        EXPECT_EQ(mismatches, 0) << first_mismatch;
        ++frames;
      }
  if (!::testing::Test::HasFailure())
    std::printf("gst oracle (GStreamer %s): %d gst_video_info_align-padded frames (%zu formats x 2 sizes x 3 "
                "paddings): plane views read the same %lld samples as GStreamer's unpack functions (%lld VYUY "
                "odd-width tail chroma samples excepted: GStreamer swaps U and V there)\n",
                gst_version_text().c_str(), frames, kFormatCount, samples - tolerated, tolerated);
}

// Adversarial trial: I420 with U and V rows interleaved so that their spans overlap but no byte is
// shared (4x4: U rows at 16 and 20, V rows at 18 and 22; 640x480: U and V rows alternate after Y) was
// refused by validate; GStreamer takes it. Both sides accept it, and the samples GStreamer writes through
// gst_video_frame_map's plane pointers are the ones our plane views read.
TEST(Oracle, InterleavedPlaneRowsAreAcceptedAsByGstreamer) {
  const Size sizes[] = {{4, 4}, {640, 480}};
  for (Size s : sizes) {
    SCOPED_TRACE(trace("I420", s));
    const gsize y = std::size_t{s.w} * s.h, chroma_row = s.w / 2;
    gsize offsets[GST_VIDEO_MAX_PLANES] = {0, y, y + chroma_row};
    gint strides[GST_VIDEO_MAX_PLANES] = {static_cast<gint>(s.w), static_cast<gint>(s.w), static_cast<gint>(s.w)};
    const gsize size = y + std::size_t{s.w} * (s.h / 2);
    GstBuffer* buffer = gst_buffer_new_allocate(nullptr, size, nullptr);
    ASSERT_NE(buffer, nullptr);
    ASSERT_NE(gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_I420, s.w, s.h, 3,
                                             offsets, strides),
              nullptr);
    GstVideoInfo info;
    gst_video_info_init(&info);
    ASSERT_TRUE(gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, s.w, s.h));
    GstVideoFrame frame;
    ASSERT_TRUE(gst_video_frame_map(&frame, &info, buffer, GST_MAP_WRITE)) << "GStreamer accepts the layout";
    for (guint p = 0; p < 3; ++p) {
      EXPECT_EQ(GST_VIDEO_FRAME_PLANE_OFFSET(&frame, p), offsets[p]);
      auto* data = static_cast<guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
      const guint rows = GST_VIDEO_FRAME_COMP_HEIGHT(&frame, p), cols = GST_VIDEO_FRAME_COMP_WIDTH(&frame, p);
      for (guint r = 0; r < rows; ++r)
        for (guint c = 0; c < cols; ++c) data[r * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p) + c] = static_cast<guint8>(p * 64 + (r + c) % 61);
    }
    gst_video_frame_unmap(&frame);
    ImageLayout l;
    l.format = PixelFormat::I420;
    l.width = s.w;
    l.height = s.h;
    for (std::size_t p = 0; p < 3; ++p) l.planes[p] = {offsets[p], static_cast<std::size_t>(strides[p])};
    auto ok = l.validate(size);
    EXPECT_TRUE(ok.has_value()) << ok.error().to_string();
    auto t = TensorDyn::allocate({size}, DType::U8);
    ASSERT_TRUE(t.has_value());
    {
      auto m = t->map_write();
      ASSERT_TRUE(m.has_value());
      ASSERT_EQ(gst_buffer_extract(buffer, 0, m->bytes().data(), size), size);
    }
    ASSERT_TRUE(t->set_image_layout(l).has_value());
    long long mismatches = 0;
    for (std::size_t p = 0; p < 3; ++p) {
      auto v = t->plane(p);
      ASSERT_TRUE(v.has_value()) << v.error().to_string();
      auto m = v->map_read();
      ASSERT_TRUE(m.has_value());
      for (std::size_t r = 0; r < v->shape()[0]; ++r)
        for (std::size_t c = 0; c < v->shape()[1]; ++c)
          mismatches += static_cast<guint8>(m->bytes()[r * static_cast<std::size_t>(v->strides()[0]) + c]) !=
                        static_cast<guint8>(p * 64 + (r + c) % 61);
    }
    EXPECT_EQ(mismatches, 0);
    gst_buffer_unref(buffer);
  }
  if (!::testing::Test::HasFailure())
    std::printf("gst oracle (GStreamer %s): I420 4x4 and 640x480 with U and V rows interleaved (spans overlap, no "
                "byte shared): gst_video_frame_map and ImageLayout::validate both accept, plane views read what "
                "GStreamer wrote\n",
                gst_version_text().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  gst_deinit();
  return rc;
}
