// SPDX-License-Identifier: Apache-2.0
// ImageLayout (image.h; src/image/image_layout.cpp over image_layout_math.h): default layouts, the two
// sizes, validation and its named errors, checked arithmetic with 64-bit and 32-bit sizes. GStreamer's
// answers for the same layouts: tests/oracle/gst_layout_test.cpp.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include "image/image_layout_math.h"
#include "support/test_support.h"

using namespace edgetensor;

#ifndef EXPECT_OK
#define EXPECT_OK(result)                                                        \
  do {                                                                           \
    const auto& et_ok_ = (result);                                               \
    EXPECT_TRUE(et_ok_.has_value()) << et_ok_.error().to_string();               \
  } while (0)
#endif

namespace {

constexpr std::size_t kSizeMax = std::numeric_limits<std::size_t>::max();
constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();
const std::string kSizeBits = std::to_string(sizeof(std::size_t) * 8);

ImageLayout layout(PixelFormat f, std::uint32_t w, std::uint32_t h, std::initializer_list<PlaneLayout> planes) {
  ImageLayout l;
  l.format = f;
  l.width = w;
  l.height = h;
  std::size_t i = 0;
  for (const auto& p : planes) l.planes[i++] = p;
  return l;
}


// ---- Default layouts ----------------------------------------------------------------------------

TEST(ImageLayoutMake, Nv12IsYThenUvWithNoGap) {
  auto l = ImageLayout::make(640, 480, PixelFormat::Nv12);
  ASSERT_OK(l);
  EXPECT_EQ(l->format, PixelFormat::Nv12);
  EXPECT_EQ(l->plane_count(), 2u);
  EXPECT_EQ(l->planes[0], (PlaneLayout{0, 640}));
  EXPECT_EQ(l->planes[1], (PlaneLayout{640 * 480, 640}));
  EXPECT_EQ(l->planes[2], PlaneLayout{});
  EXPECT_EQ(l->modifier, kDrmFormatModLinear);
  EXPECT_EQ(*ImageLayout::allocation_bytes(640, 480, PixelFormat::Nv12), 640u * 480 * 3 / 2);
  EXPECT_EQ(*l->min_buffer_bytes(), 640u * 480 * 3 / 2);
  EXPECT_OK(l->validate(640 * 480 * 3 / 2));
}

TEST(ImageLayoutMake, OddSizesRoundChromaUp) {
  // NV12 641 x 481: UV is ceil(641/2) = 321 pairs (642 B) x ceil(481/2) = 241 rows; the image height is
  // padded to 482 (the largest vertical subsampling), so UV starts after 482 Y rows.
  auto l = ImageLayout::make(641, 481, PixelFormat::Nv12);
  ASSERT_OK(l);
  EXPECT_EQ(l->plane_rows(0), 481u);
  EXPECT_EQ(l->plane_row_bytes(0), 641u);
  EXPECT_EQ(l->plane_rows(1), 241u);
  EXPECT_EQ(l->plane_row_bytes(1), 642u);
  EXPECT_EQ(l->planes[0], (PlaneLayout{0, 641}));
  EXPECT_EQ(l->planes[1], (PlaneLayout{641 * 482, 642}));
  EXPECT_EQ(*ImageLayout::allocation_bytes(641, 481, PixelFormat::Nv12), 641u * 482 + 642u * 241);
  EXPECT_EQ(*l->plane_end_bytes(0), 641u * 481);
  EXPECT_EQ(*l->plane_end_bytes(1), 641u * 482 + 642u * 241);
  // I420 3 x 3 with GStreamer's 4-byte rows: Y 4 x 4 rows, U and V 4 x 2 rows each.
  auto i420 = ImageLayout::make(3, 3, PixelFormat::I420, {.row_bytes = 4});
  ASSERT_OK(i420);
  EXPECT_EQ(i420->planes[0], (PlaneLayout{0, 4}));
  EXPECT_EQ(i420->planes[1], (PlaneLayout{16, 4}));
  EXPECT_EQ(i420->planes[2], (PlaneLayout{24, 4}));
  EXPECT_EQ(*ImageLayout::allocation_bytes(3, 3, PixelFormat::I420, {.row_bytes = 4}), 32u);
  EXPECT_EQ(*i420->min_buffer_bytes(), 24u + 4 + 2);  // V: offset + 1 row of stride + 2 B
  // YUYV 3 x 1: two groups of 2 pixels, 8 B. P010 3 x 1: UV 2 pairs of 16-bit samples, 8 B.
  EXPECT_EQ(ImageLayout::make(3, 1, PixelFormat::Yuyv)->plane_row_bytes(0), 8u);
  auto p010 = ImageLayout::make(3, 1, PixelFormat::P010);
  EXPECT_EQ(p010->plane_row_bytes(0), 6u);
  EXPECT_EQ(p010->plane_row_bytes(1), 8u);
  EXPECT_EQ(p010->plane_rows(1), 1u);
  // 1 x 1 of every format lays out and validates.
  for (const auto& f : pixel_formats()) {
    SCOPED_TRACE(std::string(f.name));
    auto one = ImageLayout::make(1, 1, f.format);
    ASSERT_OK(one);
    EXPECT_OK(one->validate(*ImageLayout::allocation_bytes(1, 1, f.format)));
  }
}

TEST(ImageLayoutMake, AlignmentPadsRowsAndHeight) {
  // A decoder's NV12 1920 x 1080: rows of 64 B, height aligned to 16 -> UV at 1920 x 1088.
  auto l = ImageLayout::make(1920, 1080, PixelFormat::Nv12, {.row_bytes = 64, .height = 16});
  ASSERT_OK(l);
  EXPECT_EQ(l->planes[1], (PlaneLayout{1920 * 1088, 1920}));
  EXPECT_EQ(*ImageLayout::allocation_bytes(1920, 1080, PixelFormat::Nv12, {64, 16}), 1920u * 1088 * 3 / 2);
  EXPECT_EQ(*l->min_buffer_bytes(), 1920u * 1088 + 1920u * 540);
  // RGB 641 wide: 1923 B rows padded to 1984 (64); I420 U rows ceil(641/2) = 321 B padded to 384.
  auto rgb = ImageLayout::make(641, 3, PixelFormat::Rgb, {.row_bytes = 64, .height = 4});
  EXPECT_EQ(rgb->planes[0].row_stride_bytes, 1984u);
  EXPECT_EQ(*ImageLayout::allocation_bytes(641, 3, PixelFormat::Rgb, {64, 4}), 1984u * 4);
  auto i420 = ImageLayout::make(641, 3, PixelFormat::I420, {.row_bytes = 64, .height = 1});
  EXPECT_EQ(i420->planes[1], (PlaneLayout{704 * 4, 384}));
  EXPECT_EQ(i420->planes[2], (PlaneLayout{704 * 4 + 384 * 2, 384}));
  EXPECT_EQ(*ImageLayout::allocation_bytes(641, 3, PixelFormat::I420, {64, 1}), 704u * 4 + 384 * 2 * 2);
  // 4096 is allowed for both.
  EXPECT_OK(ImageLayout::make(1, 1, PixelFormat::Grey, {.row_bytes = 4096, .height = 4096}));
}

TEST(ImageLayoutMake, EveryFormatAndAlignmentGivesAValidLayoutThatFitsItsAllocation) {
  for (const auto& f : pixel_formats())
    for (std::uint32_t w : {1u, 2u, 3u, 17u, 640u, 641u})
      for (std::uint32_t h : {1u, 2u, 5u, 480u, 481u})
        for (ImageAlignment a : {ImageAlignment{1, 1}, ImageAlignment{4, 1}, ImageAlignment{64, 16}}) {
          SCOPED_TRACE(std::string(f.name) + " " + std::to_string(w) + "x" + std::to_string(h) + " align " +
                       std::to_string(a.row_bytes) + "/" + std::to_string(a.height));
          auto l = ImageLayout::make(w, h, f.format, a);
          ASSERT_OK(l);
          auto alloc = ImageLayout::allocation_bytes(w, h, f.format, a);
          ASSERT_OK(alloc);
          EXPECT_OK(l->validate(*alloc));
          EXPECT_LE(*l->min_buffer_bytes(), *alloc);
          std::size_t max_vsub = 1;
          for (std::size_t p = 0; p < f.plane_count; ++p)
            max_vsub = std::max<std::size_t>(max_vsub, f.planes[p].v_subsampling);
          const std::size_t rows_align = std::max(a.height, max_vsub);
          const std::size_t padded_h = (h + rows_align - 1) / rows_align * rows_align;
          std::size_t next = 0;
          for (std::size_t p = 0; p < l->plane_count(); ++p) {
            EXPECT_EQ(l->planes[p].offset_bytes, next);
            EXPECT_EQ(l->planes[p].row_stride_bytes % a.row_bytes, 0u);
            EXPECT_GE(l->planes[p].row_stride_bytes, l->plane_row_bytes(p));
            EXPECT_LT(l->planes[p].row_stride_bytes, l->plane_row_bytes(p) + a.row_bytes);
            next += l->planes[p].row_stride_bytes * (padded_h / f.planes[p].v_subsampling);
          }
          EXPECT_EQ(next, *alloc);
        }
}

TEST(ImageLayoutMake, BadArgumentsAreNamed) {
  EXPECT_ERROR(ImageLayout::make(640, 480, PixelFormat::Unknown), ErrorCode::InvalidArgument,
               "640x480 image: the pixel format is unknown (the default); name one of pixel_format.h's");
  EXPECT_ERROR(ImageLayout::make(640, 480, static_cast<PixelFormat>(99)), ErrorCode::InvalidArgument,
               "640x480 image: pixel format 99 is not a PixelFormat value");
  EXPECT_ERROR(ImageLayout::make(0, 480, PixelFormat::Nv12), ErrorCode::InvalidArgument, "nv12 0x480");
  EXPECT_ERROR(ImageLayout::make(640, 0, PixelFormat::Nv12), ErrorCode::InvalidArgument, "non-zero");
  for (std::size_t bad : {std::size_t{0}, std::size_t{3}, std::size_t{48}, std::size_t{8192}}) {
    SCOPED_TRACE(bad);
    EXPECT_ERROR(ImageLayout::make(64, 64, PixelFormat::Grey, {.row_bytes = bad}), ErrorCode::InvalidArgument,
                 "row_bytes " + std::to_string(bad) + " is not a power of two from 1 to 4096");
    EXPECT_ERROR(ImageLayout::make(64, 64, PixelFormat::Grey, {.row_bytes = 1, .height = bad}),
                 ErrorCode::InvalidArgument, "height " + std::to_string(bad) + " is not a power of two");
    EXPECT_ERROR(ImageLayout::allocation_bytes(64, 64, PixelFormat::Grey, {.row_bytes = bad}),
                 ErrorCode::InvalidArgument, "row_bytes");
  }
}

TEST(ImageLayoutMake, HugeSizesOverflowWithOutOfRange) {
  // RGBA 2^32-1 square: 16 GiB rows times 4 G rows overflows 64 bits (and 32).
  EXPECT_ERROR(ImageLayout::make(kU32Max, kU32Max, PixelFormat::Rgba), ErrorCode::OutOfRange,
               "overflows " + kSizeBits + "-bit size arithmetic");
  EXPECT_ERROR(ImageLayout::allocation_bytes(kU32Max, kU32Max, PixelFormat::Rgba, {4096, 4096}), ErrorCode::OutOfRange,
               "rgba 4294967295x4294967295");
  // The same width, one row: 16 GiB fits 64 bits, not 32.
  auto wide = ImageLayout::allocation_bytes(kU32Max, 1, PixelFormat::Rgba);
  if constexpr (sizeof(std::size_t) == 8) {
    ASSERT_OK(wide);
    EXPECT_EQ(*wide, std::uint64_t{kU32Max} * 4);
    EXPECT_EQ(ImageLayout::make(kU32Max, 1, PixelFormat::Rgba)->plane_row_bytes(0), std::uint64_t{kU32Max} * 4);
  } else {
    EXPECT_ERROR(wide, ErrorCode::OutOfRange, "rgba 4294967295x1 plane 0 (RGBA) with rows aligned to 1 B");
    // plane_row_bytes saturates where row bytes overflow size_t; validate refuses the layout.
    const auto l = layout(PixelFormat::Rgba, kU32Max, 1, {{0, kSizeMax}});
    EXPECT_EQ(l.plane_row_bytes(0), kSizeMax);
    EXPECT_ERROR(l.validate(), ErrorCode::OutOfRange, "plane 0 (RGBA): row bytes overflows 32-bit");
  }
}

// ---- The two sizes ----------------------------------------------------------------------------------

TEST(ImageLayoutSizes, DecoderNv12WithUvAt1920x1088) {
  const auto l = layout(PixelFormat::Nv12, 1920, 1080, {{0, 1920}, {1920 * 1088, 1920}});
  EXPECT_OK(l.validate());
  EXPECT_OK(l.validate(1920 * 1088 + 1920 * 540));
  EXPECT_EQ(*l.min_buffer_bytes(), 1920u * 1088 + 1920u * 540);
  EXPECT_EQ(*l.plane_end_bytes(0), 1920u * 1080);
  EXPECT_ERROR(l.validate(1920 * 1088 + 1920 * 540 - 1), ErrorCode::OutOfRange,
               "plane 1 (UV): ends at 3125760 B");
}

TEST(ImageLayoutSizes, TightLastRowIsAcceptedAndOneByteLessIsRefusedNamingBoth) {
  // NV12 640 x 480, stride 768: the UV plane's last row holds 640 B, not 768.
  const auto l = layout(PixelFormat::Nv12, 640, 480, {{0, 768}, {768 * 480, 768}});
  const std::size_t tight = 768 * 480 + 768 * 239 + 640;
  EXPECT_EQ(tight, 552832u);
  EXPECT_EQ(*l.min_buffer_bytes(), tight);
  EXPECT_EQ(*l.plane_end_bytes(0), 768u * 479 + 640);
  EXPECT_EQ(*l.plane_end_bytes(1), tight);
  EXPECT_OK(l.validate(tight));
  const auto r = l.validate(tight - 1);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "nv12 640x480 plane 1 (UV): ends at 552832 B");
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "240 rows of stride 768 B, last row 640 B");
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "the buffer has 552831 B");
}

TEST(ImageLayoutSizes, PlaneRowsAndRowBytesPastThePlanesAreZero) {
  const auto l = *ImageLayout::make(4, 4, PixelFormat::Nv12);
  EXPECT_EQ(l.plane_rows(2), 0u);
  EXPECT_EQ(l.plane_row_bytes(2), 0u);
  EXPECT_EQ(l.plane_rows(kSizeMax), 0u);
  EXPECT_ERROR(l.plane_end_bytes(2), ErrorCode::OutOfRange, "plane index 2 is past its 2 planes");
  const ImageLayout unknown;
  EXPECT_EQ(unknown.plane_count(), 0u);
  EXPECT_EQ(unknown.plane_rows(0), 0u);
  EXPECT_ERROR(unknown.min_buffer_bytes(), ErrorCode::InvalidArgument, "the pixel format is unknown");
}

TEST(ImageLayoutSizes, PlaneEndOverflowIsOutOfRange) {
  auto l = layout(PixelFormat::Grey, 16, 2, {{kSizeMax - 20, 16}});
  EXPECT_ERROR(l.plane_end_bytes(0), ErrorCode::OutOfRange,
               "plane 0 (Y): offset " + std::to_string(kSizeMax - 20) + " B + 2 rows");
  EXPECT_ERROR(l.min_buffer_bytes(), ErrorCode::OutOfRange, "overflows " + kSizeBits + "-bit");
  EXPECT_ERROR(l.validate(), ErrorCode::OutOfRange, "overflows " + kSizeBits + "-bit");
  // (rows - 1) x stride overflows: RGBA 2^32-1 square with tight rows (64-bit), or 2^14 x 2^16 (32-bit).
  if constexpr (sizeof(std::size_t) == 8) {
    auto huge = layout(PixelFormat::Rgba, kU32Max, kU32Max, {{0, static_cast<std::size_t>(std::uint64_t{kU32Max} * 4)}});
    EXPECT_ERROR(huge.validate(), ErrorCode::OutOfRange, "4294967295 rows of stride 17179869180 B");
  } else {
    auto huge = layout(PixelFormat::Rgba, 1u << 14, 1u << 16, {{0, 1u << 16}});
    EXPECT_ERROR(huge.validate(), ErrorCode::OutOfRange, "65536 rows of stride 65536 B");
  }
}

// ---- Validation ---------------------------------------------------------------------------------

TEST(ImageLayoutValidate, StrideBelowRowBytesNamesThePlaneAndBoth) {
  // NV12 641 wide: UV rows are 642 B, so a stride of 641 (the Y stride) is too small.
  auto l = layout(PixelFormat::Nv12, 641, 481, {{0, 641}, {641 * 482, 641}});
  EXPECT_ERROR(l.validate(), ErrorCode::InvalidArgument,
               "nv12 641x481 plane 1 (UV): row stride 641 B is below the plane's row bytes 642 B");
  auto old_set_image = layout(PixelFormat::Nv12, 640, 480, {{0, 100}, {640 * 480, 640}});
  EXPECT_ERROR(old_set_image.validate(1 << 20), ErrorCode::InvalidArgument, "plane 0 (Y): row stride 100 B");
  auto zero = layout(PixelFormat::Rgb, 2, 2, {{0, 0}});
  EXPECT_ERROR(zero.validate(), ErrorCode::InvalidArgument, "row stride 0 B is below the plane's row bytes 6 B");
}

TEST(ImageLayoutValidate, OverlappingPlanesNameBothRanges) {
  // UV one row too early: it starts inside Y's last row.
  auto l = layout(PixelFormat::Nv12, 640, 480, {{0, 640}, {640 * 479, 640}});
  EXPECT_OK(l.validate());  // on its own, overlap is not checked (planes may be separate buffers)
  EXPECT_ERROR(l.validate(1 << 20), ErrorCode::InvalidArgument,
               "nv12 640x480: plane 0 (Y) [0, 307200) and plane 1 (UV) [306560, 460160) overlap");
  // I420 with V on top of U.
  auto i420 = layout(PixelFormat::I420, 4, 4, {{0, 4}, {16, 2}, {16, 2}});
  EXPECT_ERROR(i420.validate(64), ErrorCode::InvalidArgument, "plane 1 (U) [16, 20) and plane 2 (V) [16, 20) overlap");
  // Planes in another order than the table's, touching but not overlapping, are fine.
  auto swapped = layout(PixelFormat::I420, 4, 4, {{8, 4}, {4, 2}, {0, 2}});
  EXPECT_OK(swapped.validate(24));
  // Rows of U and V interleaved one byte too close: the first rows share byte 17, both rows named.
  auto touching = layout(PixelFormat::I420, 4, 4, {{0, 4}, {16, 4}, {17, 4}});
  EXPECT_ERROR(touching.validate(64), ErrorCode::InvalidArgument,
               "i420 4x4: plane 1 (U) [16, 22) and plane 2 (V) [17, 23) overlap (row 0 [16, 18) and row 0 [17, 19))");
  // Rows that share a byte only further down (V's stride is U's half: its second row is U's second).
  auto later = layout(PixelFormat::I420, 4, 4, {{0, 4}, {16, 4}, {18, 2}});
  EXPECT_ERROR(later.validate(64), ErrorCode::InvalidArgument,
               "plane 1 (U) [16, 22) and plane 2 (V) [18, 22) overlap (row 1 [20, 22) and row 1 [20, 22))");
}

// Adversarial trial: rows interleaved so that the planes' spans overlap but no byte is shared were
// refused ("plane 1 (U) [16, 22) and plane 2 (V) [18, 24) overlap"); GStreamer 1.22 accepts them
// (tests/oracle: InterleavedPlaneRowsAreAcceptedAsByGstreamer). Overlap is now checked row by row.
TEST(ImageLayoutValidate, InterleavedRowsThatShareNoByteAreAccepted) {
  auto interleaved = layout(PixelFormat::I420, 4, 4, {{0, 4}, {16, 4}, {18, 4}});
  EXPECT_OK(interleaved.validate(24));
  EXPECT_OK(interleaved.validate(64));
  // A 4K NV12 with Y and UV rows interleaved (UV rows in the gaps of every second Y row pair).
  auto nv12 = layout(PixelFormat::Nv12, 3840, 2160, {{0, 2 * 3840}, {3840, 4 * 3840}});
  EXPECT_OK(nv12.validate(2160 * 2 * 3840));
  nv12.planes[1].offset_bytes -= 1;  // one byte into Y's first row
  EXPECT_ERROR(nv12.validate(2160 * 2 * 3840), ErrorCode::InvalidArgument, "(row 0 [0, 3840) and row 0 [3839, 7679))");
}

// The row-by-row check against a byte map, for every pair of small two-plane layouts (offsets 0..11,
// strides row bytes..row bytes + 5): shared_rows finds a pair exactly when some byte lies in both planes,
// and the pair it names does share a byte; with 64-bit and 32-bit sizes.
template <class L>
void shared_rows_match_a_byte_map() {
  int overlapping = 0, apart = 0;
  for (std::size_t o1 = 0; o1 < 12; ++o1)
    for (std::size_t s0 = 2; s0 < 8; ++s0)
      for (std::size_t s1 = 2; s1 < 8; ++s1) {
        L l{};
        l.format = PixelFormat::Nv16;  // two planes of 2-byte rows at width 2, 3 rows each at height 3
        l.width = 2;
        l.height = 3;
        l.planes[0] = {0, static_cast<detail::LayoutSize<L>>(s0)};
        l.planes[1] = {static_cast<detail::LayoutSize<L>>(o1), static_cast<detail::LayoutSize<L>>(s1)};
        std::array<int, 64> owner{};
        bool shared = false;
        for (std::size_t p = 0; p < 2; ++p)
          for (std::size_t r = 0; r < 3; ++r)
            for (std::size_t b = 0; b < 2; ++b) {
              int& o = owner[l.planes[p].offset_bytes + r * l.planes[p].row_stride_bytes + b];
              shared |= o != 0 && o != static_cast<int>(p + 1);
              o = static_cast<int>(p + 1);
            }
        const auto rows = detail::shared_rows(l, 0, 1);
        ASSERT_EQ(rows.has_value(), shared) << "offset " << o1 << " strides " << s0 << ", " << s1;
        if (rows) {
          const auto b0 = l.planes[0].offset_bytes + rows->first * s0, b1 = o1 + rows->second * s1;
          EXPECT_TRUE(b0 < b1 + 2 && b1 < b0 + 2) << "the named rows share a byte";
          ++overlapping;
        } else {
          ++apart;
        }
      }
  EXPECT_GT(overlapping, 0);
  EXPECT_GT(apart, 0);
}

TEST(ImageLayoutValidate, PlanePastTheEndIsOutOfRange) {
  auto l = *ImageLayout::make(640, 480, PixelFormat::I420);
  const std::size_t size = 640 * 480 * 3 / 2;
  EXPECT_OK(l.validate(size));
  EXPECT_ERROR(l.validate(size - 1), ErrorCode::OutOfRange, "plane 2 (V): ends at 460800 B");
  EXPECT_ERROR(l.validate(100), ErrorCode::OutOfRange, "i420 640x480 plane 0 (Y): ends at 307200 B");
  EXPECT_ERROR(l.validate(0), ErrorCode::OutOfRange, "the buffer has 0 B");
  l.planes[1].offset_bytes = size;
  EXPECT_ERROR(l.validate(size), ErrorCode::OutOfRange, "plane 1 (U): ends at 537600 B (offset 460800 B");
}

TEST(ImageLayoutValidate, UnknownFormatZeroSizeAndUnusedPlanes) {
  auto unknown = layout(PixelFormat::Unknown, 4, 4, {{0, 4}});
  EXPECT_ERROR(unknown.validate(), ErrorCode::InvalidArgument, "4x4 image: the pixel format is unknown");
  auto invalid = layout(static_cast<PixelFormat>(kPixelFormatCount), 4, 4, {{0, 4}});
  EXPECT_ERROR(invalid.validate(64), ErrorCode::InvalidArgument, "4x4 image: pixel format 29 is not a PixelFormat value");
  EXPECT_ERROR(layout(PixelFormat::Grey, 0, 4, {{0, 4}}).validate(), ErrorCode::InvalidArgument,
               "grey 0x4: width and height must be non-zero");
  EXPECT_ERROR(layout(PixelFormat::Grey, 4, 0, {{0, 4}}).validate(16), ErrorCode::InvalidArgument, "non-zero");
  auto extra = layout(PixelFormat::Nv12, 4, 4, {{0, 4}, {16, 4}, {0, 0}, {0, 0}});
  EXPECT_OK(extra.validate(24));
  extra.planes[2].offset_bytes = 5;
  EXPECT_ERROR(extra.validate(), ErrorCode::InvalidArgument,
               "nv12 4x4: plane 2 is unused (nv12 has 2 planes) but has offset 5 B and row stride 0 B");
  extra.planes[2] = {};
  extra.planes[3].row_stride_bytes = 4;
  EXPECT_ERROR(extra.validate(24), ErrorCode::InvalidArgument, "plane 3 is unused");
}

TEST(ImageLayoutValidate, AModifierDoesNotChangeTheChecks) {
  // Non-linear layouts are opaque to the CPU (maps refuse them) but their planes are still checked.
  auto l = *ImageLayout::make(64, 64, PixelFormat::Nv12);
  l.modifier = kDrmFormatModInvalid;
  EXPECT_OK(l.validate(64 * 96));
  EXPECT_ERROR(l.validate(64 * 96 - 1), ErrorCode::OutOfRange, "plane 1 (UV)");
  EXPECT_NE(l, *ImageLayout::make(64, 64, PixelFormat::Nv12));
}

// ---- 32-bit size arithmetic (size_t is 32 bits on armhf) -------------------------------------------

struct Plane32 {
  std::uint32_t offset_bytes = 0;
  std::uint32_t row_stride_bytes = 0;
};
struct Layout32 {
  PixelFormat format = PixelFormat::Unknown;
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::array<Plane32, kMaxPlanes> planes{};
  std::uint64_t modifier = kDrmFormatModLinear;
};
static_assert(std::is_same_v<detail::LayoutSize<Layout32>, std::uint32_t>);
static_assert(std::is_same_v<detail::LayoutSize<ImageLayout>, std::size_t>);

Result<Layout32> make32(std::uint32_t w, std::uint32_t h, PixelFormat f, std::uint32_t* alloc, std::size_t row = 1,
                        std::size_t height = 1) {
  return detail::default_layout<Layout32>(w, h, f, row, height, alloc);
}

TEST(ImageLayout32, SameAnswersAs64BitWhereTheyFit) {
  for (const auto& f : pixel_formats())
    for (std::uint32_t w : {1u, 3u, 641u, 1920u})
      for (std::uint32_t h : {1u, 3u, 481u, 1080u}) {
        SCOPED_TRACE(std::string(f.name) + " " + std::to_string(w) + "x" + std::to_string(h));
        std::uint32_t alloc32 = 0;
        auto l32 = make32(w, h, f.format, &alloc32, 64, 16);
        auto l64 = ImageLayout::make(w, h, f.format, {64, 16});
        ASSERT_OK(l32);
        ASSERT_OK(l64);
        for (std::size_t p = 0; p < kMaxPlanes; ++p) {
          EXPECT_EQ(l32->planes[p].offset_bytes, l64->planes[p].offset_bytes);
          EXPECT_EQ(l32->planes[p].row_stride_bytes, l64->planes[p].row_stride_bytes);
        }
        EXPECT_EQ(alloc32, *ImageLayout::allocation_bytes(w, h, f.format, {64, 16}));
        EXPECT_EQ(*detail::min_buffer(*l32), *l64->min_buffer_bytes());
        const std::uint32_t* none = nullptr;
        EXPECT_TRUE(detail::validate_layout(*l32, none));
        EXPECT_TRUE(detail::validate_layout(*l32, &alloc32));
      }
}

TEST(ImageLayoutValidate, SharedRowsMatchAByteMap) {
  shared_rows_match_a_byte_map<ImageLayout>();
  shared_rows_match_a_byte_map<Layout32>();
}

TEST(ImageLayout32, OverflowsAreOutOfRangeNamingThe32BitLimit) {
  std::uint32_t alloc = 0;
  // Grey 65535 x 65537 is 2^32 - 1 bytes: the largest that fits.
  ASSERT_OK(make32(65535, 65537, PixelFormat::Grey, &alloc));
  EXPECT_EQ(alloc, kU32Max);
  EXPECT_ERROR(make32(65536, 65536, PixelFormat::Grey, &alloc), ErrorCode::OutOfRange,
               "grey 65536x65536 plane 0 (Y) with rows aligned to 1 B and height to 1 overflows 32-bit size arithmetic");
  // NV12 65536 x 43692: each plane fits, their sum does not.
  EXPECT_ERROR(make32(65536, 43692, PixelFormat::Nv12, &alloc), ErrorCode::OutOfRange, "plane 1 (UV)");
  ASSERT_OK(make32(65536, 43690, PixelFormat::Nv12, &alloc));
  // Row bytes alone: RGBA 2^30 wide is 4 GiB per row.
  EXPECT_ERROR(make32(1u << 30, 1, PixelFormat::Rgba, &alloc), ErrorCode::OutOfRange, "overflows 32-bit");
  EXPECT_FALSE(detail::plane_row_bytes_of<std::uint32_t>(pixel_format_info(PixelFormat::Rgba).planes[0], 1u << 30));
  // Height rounded up to the alignment.
  EXPECT_ERROR(make32(1, kU32Max, PixelFormat::Grey, &alloc, 1, 16), ErrorCode::OutOfRange,
               "grey 1x4294967295: height aligned to 16 overflows 32-bit");
  // A plane end past 2^32.
  Layout32 l{PixelFormat::Grey, 256, 2, {}, kDrmFormatModLinear};
  l.planes[0] = {0xFFFFFF00u, 256};
  EXPECT_ERROR(detail::plane_end(l, 0), ErrorCode::OutOfRange, "overflows 32-bit");
  const std::uint32_t* none = nullptr;
  EXPECT_ERROR(detail::validate_layout(l, none), ErrorCode::OutOfRange, "overflows 32-bit");
  // The stride check compares in 32 bits: RGBA 2^30 wide has row bytes that do not fit at all.
  Layout32 wide{PixelFormat::Rgba, 1u << 30, 1, {}, kDrmFormatModLinear};
  wide.planes[0] = {0, kU32Max};
  EXPECT_ERROR(detail::validate_layout(wide, none), ErrorCode::OutOfRange, "row bytes overflows 32-bit");
}

}  // namespace
