// SPDX-License-Identifier: Apache-2.0
// Colorimetry <-> V4L2 (src/image/colorimetry.cpp), checked against the kernel's own header: every value
// below is spelled with <linux/videodev2.h>'s names, and the DEFAULT resolution is compared with its
// V4L2_MAP_*_DEFAULT macros. Primaries per colorspace: the kernel's V4L2 documentation, "Detailed
// Colorspace Descriptions" (chromaticity tables).
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <linux/videodev2.h>

#include <cstdint>
#include <set>
#include <string>

#include "support/test_support.h"

using namespace edgetensor;

namespace {

using CP = ColorPrimaries;
using TF = TransferFunction;
using YM = YcbcrMatrix;
using CR = ColorRange;

// Independent of the library's tables: the kernel's names, our meaning of each.
struct CsRow {
  std::uint32_t v4l2;
  const char* name;
  CP primaries;
};
constexpr CsRow kColorspaces[] = {
    {V4L2_COLORSPACE_DEFAULT, "DEFAULT", CP::Unspecified},
    {V4L2_COLORSPACE_SMPTE170M, "SMPTE170M", CP::Smpte170M},      // R 0.630 0.340, G 0.310 0.595, B 0.155 0.070, D65
    {V4L2_COLORSPACE_SMPTE240M, "SMPTE240M", CP::Smpte170M},      // "identical to the SMPTE 170M colorspace"
    {V4L2_COLORSPACE_REC709, "REC709", CP::Bt709},                // R 0.640 0.330, G 0.300 0.600, B 0.150 0.060, D65
    {V4L2_COLORSPACE_470_SYSTEM_M, "470_SYSTEM_M", CP::Bt470M},   // R 0.67 0.33, G 0.21 0.71, B 0.14 0.08, C
    {V4L2_COLORSPACE_470_SYSTEM_BG, "470_SYSTEM_BG", CP::Bt470Bg},  // R 0.64 0.33, G 0.29 0.60, B 0.15 0.06, D65
    {V4L2_COLORSPACE_JPEG, "JPEG", CP::Bt709},                    // "identical to sRGB"
    {V4L2_COLORSPACE_SRGB, "SRGB", CP::Bt709},                    // "identical to the Rec. 709 colorspace"
    {V4L2_COLORSPACE_OPRGB, "OPRGB", CP::AdobeRgb},               // R 0.64 0.33, G 0.21 0.71, B 0.15 0.06, D65
    {V4L2_COLORSPACE_BT2020, "BT2020", CP::Bt2020},               // R 0.708 0.292, G 0.170 0.797, B 0.131 0.046
    {V4L2_COLORSPACE_RAW, "RAW", CP::Unspecified},                // the device's own
    {V4L2_COLORSPACE_DCI_P3, "DCI_P3", CP::DciP3},                // R 0.680 0.320, G 0.265 0.690, B 0.150 0.060, DCI white
};
struct XferRow {
  std::uint32_t v4l2;
  TF transfer;
};
constexpr XferRow kXfers[] = {
    {V4L2_XFER_FUNC_DEFAULT, TF::Unspecified}, {V4L2_XFER_FUNC_709, TF::Bt709},
    {V4L2_XFER_FUNC_SRGB, TF::Srgb},           {V4L2_XFER_FUNC_OPRGB, TF::AdobeRgb},
    {V4L2_XFER_FUNC_SMPTE240M, TF::Smpte240M}, {V4L2_XFER_FUNC_NONE, TF::Linear},
    {V4L2_XFER_FUNC_DCI_P3, TF::DciP3},        {V4L2_XFER_FUNC_SMPTE2084, TF::Smpte2084},
};
struct EncRow {
  std::uint32_t v4l2;
  YM matrix;
  bool canonical;  // written back by colorimetry_to_v4l2 (the others are aliases)
};
constexpr EncRow kEncs[] = {
    {V4L2_YCBCR_ENC_DEFAULT, YM::Unspecified, true},
    {V4L2_YCBCR_ENC_601, YM::Bt601, true},
    {V4L2_YCBCR_ENC_709, YM::Bt709, true},
    {V4L2_YCBCR_ENC_XV601, YM::Bt601, false},  // extended gamut: lossy
    {V4L2_YCBCR_ENC_XV709, YM::Bt709, false},
    {V4L2_YCBCR_ENC_SYCC, YM::Bt601, false},  // "identical to ENC_601"
    {V4L2_YCBCR_ENC_BT2020, YM::Bt2020, true},
    {V4L2_YCBCR_ENC_BT2020_CONST_LUM, YM::Bt2020Constant, true},
    {V4L2_YCBCR_ENC_SMPTE240M, YM::Smpte240M, true},
};
struct QuantRow {
  std::uint32_t v4l2;
  CR range;
};
constexpr QuantRow kQuants[] = {
    {V4L2_QUANTIZATION_DEFAULT, CR::Unspecified},
    {V4L2_QUANTIZATION_FULL_RANGE, CR::Full},
    {V4L2_QUANTIZATION_LIM_RANGE, CR::Limited},
};

TF transfer_of(std::uint32_t xfer) {
  for (const auto& r : kXfers)
    if (r.v4l2 == xfer) return r.transfer;
  ADD_FAILURE() << "xfer " << xfer;
  return TF::Unspecified;
}
YM matrix_of(std::uint32_t enc) {
  for (const auto& r : kEncs)
    if (r.v4l2 == enc) return r.matrix;
  ADD_FAILURE() << "enc " << enc;
  return YM::Unspecified;
}
CR range_of(std::uint32_t quant) {
  for (const auto& r : kQuants)
    if (r.v4l2 == quant) return r.range;
  ADD_FAILURE() << "quant " << quant;
  return CR::Unspecified;
}

std::string describe(const V4l2Colorimetry& v) {
  return "{colorspace " + std::to_string(v.colorspace) + ", ycbcr_enc " + std::to_string(v.ycbcr_enc) +
         ", quantization " + std::to_string(v.quantization) + ", xfer_func " + std::to_string(v.xfer_func) + "}";
}

TEST(Colorimetry, EveryV4l2ValueRoundTrips) {
  // Every combination of every valid value, RGB and not: from -> to -> from gives the same colorimetry.
  int checked = 0;
  for (const auto& cs : kColorspaces)
    for (const auto& xfer : kXfers)
      for (const auto& enc : kEncs)
        for (const auto& quant : kQuants)
          for (bool is_rgb : {false, true}) {
            const V4l2Colorimetry v{cs.v4l2, enc.v4l2, quant.v4l2, xfer.v4l2};
            SCOPED_TRACE(describe(v) + (is_rgb ? " rgb" : " yuv"));
            auto c = colorimetry_from_v4l2(v, is_rgb);
            ASSERT_OK(c);
            EXPECT_EQ(c->primaries, cs.primaries);
            if (xfer.v4l2 != V4L2_XFER_FUNC_DEFAULT) {
              EXPECT_EQ(c->transfer, xfer.transfer);
            }
            if (enc.v4l2 != V4L2_YCBCR_ENC_DEFAULT) {
              EXPECT_EQ(c->matrix, enc.matrix);
            }
            if (quant.v4l2 != V4L2_QUANTIZATION_DEFAULT) {
              EXPECT_EQ(c->range, quant.range);
            }
            auto back = colorimetry_to_v4l2(*c);
            ASSERT_OK(back);
            auto again = colorimetry_from_v4l2(*back, is_rgb);
            ASSERT_OK(again);
            EXPECT_EQ(*again, *c) << describe(*back);
            ++checked;
          }
  EXPECT_EQ(checked, 12 * 8 * 9 * 3 * 2);
}

TEST(Colorimetry, ExplicitV4l2ValuesComeBackExactly) {
  // Each colorspace with its own defaults written out (JPEG and RAW excepted: see image.h).
  for (const auto& cs : kColorspaces) {
    if (cs.v4l2 == V4L2_COLORSPACE_DEFAULT || cs.v4l2 == V4L2_COLORSPACE_JPEG || cs.v4l2 == V4L2_COLORSPACE_RAW)
      continue;
    const V4l2Colorimetry v{cs.v4l2, static_cast<std::uint32_t>(V4L2_MAP_YCBCR_ENC_DEFAULT(cs.v4l2)),
                            V4L2_QUANTIZATION_LIM_RANGE, static_cast<std::uint32_t>(V4L2_MAP_XFER_FUNC_DEFAULT(cs.v4l2))};
    SCOPED_TRACE(cs.name);
    EXPECT_EQ(colorimetry_to_v4l2(*colorimetry_from_v4l2(v, false)).value(), v);
  }
  // Each transfer, encoding and quantization value on its own.
  for (const auto& xfer : kXfers) {
    const std::uint32_t cs = xfer.v4l2 == V4L2_XFER_FUNC_SRGB ? V4L2_COLORSPACE_SRGB : V4L2_COLORSPACE_REC709;
    for (const auto& enc : kEncs)
      for (const auto& quant : kQuants) {
        if (!enc.canonical) continue;
        const V4l2Colorimetry v{cs, enc.v4l2, quant.v4l2, xfer.v4l2};
        if (v.xfer_func == 0 || v.ycbcr_enc == 0 || v.quantization == 0) continue;  // DEFAULT resolves
        SCOPED_TRACE(describe(v));
        EXPECT_EQ(colorimetry_to_v4l2(*colorimetry_from_v4l2(v, false)).value(), v);
      }
  }
  // The all-DEFAULT fields and the empty colorimetry are each other's image.
  EXPECT_EQ(*colorimetry_from_v4l2(V4l2Colorimetry{}, false), Colorimetry{});
  EXPECT_EQ(*colorimetry_from_v4l2(V4l2Colorimetry{}, true),
            (Colorimetry{CP::Unspecified, TF::Unspecified, YM::Identity, CR::Unspecified}))
      << "RGB data has no YCbCr matrix, whatever the driver left unsaid";
  EXPECT_EQ(*colorimetry_to_v4l2(Colorimetry{}), V4l2Colorimetry{});
}

TEST(Colorimetry, EveryExpressibleColorimetryRoundTrips) {
  // Every combination without an Unspecified field that V4L2 can express comes back unchanged.
  int checked = 0;
  for (int p = 1; p <= static_cast<int>(CP::Bt470M); ++p)
    for (int t = 1; t <= static_cast<int>(TF::Smpte240M); ++t)
      for (int m = 1; m <= static_cast<int>(YM::Identity); ++m)
        for (int r = 1; r <= static_cast<int>(CR::Limited); ++r) {
          const Colorimetry c{static_cast<CP>(p), static_cast<TF>(t), static_cast<YM>(m), static_cast<CR>(r)};
          auto v = colorimetry_to_v4l2(c);
          if (c.primaries == CP::DisplayP3 || c.transfer == TF::AribStdB67) {
            EXPECT_FALSE(v.has_value());
            continue;
          }
          if (c.matrix == YM::Identity) {  // RGB: no V4L2 encoding, DEFAULT; an RGB format reads it back
            ASSERT_OK(v);
            EXPECT_EQ(v->ycbcr_enc, static_cast<std::uint32_t>(V4L2_YCBCR_ENC_DEFAULT));
            EXPECT_EQ(*colorimetry_from_v4l2(*v, true), c);
            ++checked;
            continue;
          }
          ASSERT_OK(v);
          SCOPED_TRACE(describe(*v));
          EXPECT_NE(v->colorspace, static_cast<std::uint32_t>(V4L2_COLORSPACE_DEFAULT));
          EXPECT_NE(v->xfer_func, static_cast<std::uint32_t>(V4L2_XFER_FUNC_DEFAULT));
          EXPECT_NE(v->ycbcr_enc, static_cast<std::uint32_t>(V4L2_YCBCR_ENC_DEFAULT));
          EXPECT_NE(v->quantization, static_cast<std::uint32_t>(V4L2_QUANTIZATION_DEFAULT));
          for (bool is_rgb : {false, true}) EXPECT_EQ(*colorimetry_from_v4l2(*v, is_rgb), c);
          ++checked;
        }
  EXPECT_EQ(checked, 7 * 7 * 6 * 2);  // without DisplayP3, AribStdB67
}

TEST(Colorimetry, DefaultsResolveAsTheKernelMacrosSay) {
  for (const auto& cs : kColorspaces) {
    if (cs.v4l2 == V4L2_COLORSPACE_DEFAULT) continue;
    for (bool is_rgb : {false, true}) {
      SCOPED_TRACE(std::string(cs.name) + (is_rgb ? " rgb" : " yuv"));
      auto c = colorimetry_from_v4l2(V4l2Colorimetry{cs.v4l2, 0, 0, 0}, is_rgb);
      ASSERT_OK(c);
      EXPECT_EQ(c->primaries, cs.primaries);
      EXPECT_EQ(c->transfer, transfer_of(V4L2_MAP_XFER_FUNC_DEFAULT(cs.v4l2)));
      // An RGB format's DEFAULT encoding is Identity (no YCbCr matrix), as GStreamer's v4l2src says.
      EXPECT_EQ(c->matrix, is_rgb ? YM::Identity : matrix_of(V4L2_MAP_YCBCR_ENC_DEFAULT(cs.v4l2)));
      EXPECT_EQ(c->range, range_of(V4L2_MAP_QUANTIZATION_DEFAULT(is_rgb, cs.v4l2, 0)));
    }
  }
  // The cases that matter most, spelled out.
  EXPECT_EQ(*colorimetry_from_v4l2({V4L2_COLORSPACE_JPEG, 0, 0, 0}, false),
            (Colorimetry{CP::Bt709, TF::Srgb, YM::Bt601, CR::Full}));
  EXPECT_EQ(*colorimetry_from_v4l2({V4L2_COLORSPACE_SRGB, 0, 0, 0}, false),
            (Colorimetry{CP::Bt709, TF::Srgb, YM::Bt601, CR::Limited}));
  EXPECT_EQ(*colorimetry_from_v4l2({V4L2_COLORSPACE_SRGB, 0, 0, 0}, true),
            (Colorimetry{CP::Bt709, TF::Srgb, YM::Identity, CR::Full}));
  EXPECT_EQ(*colorimetry_from_v4l2({V4L2_COLORSPACE_REC709, 0, 0, 0}, false),
            (Colorimetry{CP::Bt709, TF::Bt709, YM::Bt709, CR::Limited}));
  EXPECT_EQ(*colorimetry_from_v4l2({V4L2_COLORSPACE_RAW, 0, 0, 0}, true),
            (Colorimetry{CP::Unspecified, TF::Linear, YM::Identity, CR::Full}));
  // An explicit encoding on an RGB format is kept.
  EXPECT_EQ(colorimetry_from_v4l2({V4L2_COLORSPACE_SRGB, V4L2_YCBCR_ENC_709, 0, 0}, true)->matrix, YM::Bt709);
  // Explicit fields override the colorspace's defaults.
  EXPECT_EQ(*colorimetry_from_v4l2({V4L2_COLORSPACE_JPEG, V4L2_YCBCR_ENC_709, V4L2_QUANTIZATION_LIM_RANGE,
                                    V4L2_XFER_FUNC_709},
                                   false),
            (Colorimetry{CP::Bt709, TF::Bt709, YM::Bt709, CR::Limited}));
}

TEST(Colorimetry, ColorspaceDefaultLeavesDefaultFieldsUnspecified) {
  // The driver did not say: nothing to resolve from (an RGB format still has no YCbCr matrix).
  // Explicit fields are kept.
  for (bool is_rgb : {false, true}) {
    EXPECT_EQ(*colorimetry_from_v4l2({V4L2_COLORSPACE_DEFAULT, 0, 0, 0}, is_rgb),
              (Colorimetry{CP::Unspecified, TF::Unspecified, is_rgb ? YM::Identity : YM::Unspecified,
                           CR::Unspecified}));
    EXPECT_EQ(*colorimetry_from_v4l2({V4L2_COLORSPACE_DEFAULT, V4L2_YCBCR_ENC_BT2020, V4L2_QUANTIZATION_FULL_RANGE,
                                      V4L2_XFER_FUNC_SMPTE2084},
                                     is_rgb),
              (Colorimetry{CP::Unspecified, TF::Smpte2084, YM::Bt2020, CR::Full}));
  }
  // And the way back: Unspecified primaries give colorspace DEFAULT, other fields stay explicit.
  EXPECT_EQ(*colorimetry_to_v4l2(Colorimetry{CP::Unspecified, TF::Linear, YM::Unspecified, CR::Full}),
            (V4l2Colorimetry{V4L2_COLORSPACE_DEFAULT, V4L2_YCBCR_ENC_DEFAULT, V4L2_QUANTIZATION_FULL_RANGE,
                             V4L2_XFER_FUNC_NONE}));
}

TEST(Colorimetry, ToV4l2PicksTheColorspaceByPrimariesAndTransfer) {
  EXPECT_EQ(colorimetry_to_v4l2({CP::Bt709, TF::Srgb, YM::Bt601, CR::Full})->colorspace,
            static_cast<std::uint32_t>(V4L2_COLORSPACE_SRGB));
  EXPECT_EQ(colorimetry_to_v4l2({CP::Bt709, TF::Bt709, YM::Bt709, CR::Limited})->colorspace,
            static_cast<std::uint32_t>(V4L2_COLORSPACE_REC709));
  EXPECT_EQ(colorimetry_to_v4l2({CP::Smpte170M, TF::Smpte240M, YM::Smpte240M, CR::Limited})->colorspace,
            static_cast<std::uint32_t>(V4L2_COLORSPACE_SMPTE240M));
  EXPECT_EQ(colorimetry_to_v4l2({CP::Smpte170M, TF::Bt709, YM::Bt601, CR::Limited})->colorspace,
            static_cast<std::uint32_t>(V4L2_COLORSPACE_SMPTE170M));
  // An Unspecified field becomes DEFAULT, which V4L2 then resolves from the colorspace.
  auto v = colorimetry_to_v4l2({CP::Bt2020, TF::Unspecified, YM::Unspecified, CR::Unspecified});
  ASSERT_OK(v);
  EXPECT_EQ(*v, (V4l2Colorimetry{V4L2_COLORSPACE_BT2020, 0, 0, 0}));
  EXPECT_EQ(*colorimetry_from_v4l2(*v, false), (Colorimetry{CP::Bt2020, TF::Bt709, YM::Bt2020, CR::Limited}));
}

TEST(Colorimetry, ToV4l2RefusesWhatV4l2CannotExpress) {
  EXPECT_ERROR(colorimetry_to_v4l2({CP::DisplayP3, TF::Srgb, YM::Bt709, CR::Full}), ErrorCode::Unsupported,
               "colorimetry primaries display_p3: V4L2 has no colorspace for them");
  EXPECT_ERROR(colorimetry_to_v4l2({CP::Bt2020, TF::AribStdB67, YM::Bt2020, CR::Limited}), ErrorCode::Unsupported,
               "colorimetry transfer arib_std_b67: V4L2 has no xfer_func value for it");
  // RGB's Identity matrix has no V4L2 encoding: DEFAULT (the sRGB of GStreamer's RGB formats converts).
  auto rgb = colorimetry_to_v4l2({CP::Bt709, TF::Srgb, YM::Identity, CR::Full});
  ASSERT_OK(rgb);
  EXPECT_EQ(*rgb, (V4l2Colorimetry{V4L2_COLORSPACE_SRGB, V4L2_YCBCR_ENC_DEFAULT, V4L2_QUANTIZATION_FULL_RANGE,
                                   V4L2_XFER_FUNC_SRGB}));
  // Values outside our enums are a broken contract.
  const auto bad = [](auto e) { return static_cast<decltype(e)>(200); };
  EXPECT_ERROR(colorimetry_to_v4l2({bad(CP{}), TF::Bt709, YM::Bt709, CR::Full}), ErrorCode::InvalidArgument,
               "colorimetry primaries 200: not a value of its enum");
  EXPECT_ERROR(colorimetry_to_v4l2({CP::Bt709, bad(TF{}), YM::Bt709, CR::Full}), ErrorCode::InvalidArgument,
               "colorimetry transfer 200: not a value of its enum");
  EXPECT_ERROR(colorimetry_to_v4l2({CP::Bt709, TF::Bt709, bad(YM{}), CR::Full}), ErrorCode::InvalidArgument,
               "colorimetry matrix 200: not a value of its enum");
  EXPECT_ERROR(colorimetry_to_v4l2({CP::Bt709, TF::Bt709, YM::Bt709, bad(CR{})}), ErrorCode::InvalidArgument,
               "colorimetry range 200: not a value of its enum");
}

TEST(Colorimetry, FromV4l2NamesEveryInvalidValue) {
  EXPECT_ERROR(colorimetry_from_v4l2({V4L2_COLORSPACE_DCI_P3 + 1, 0, 0, 0}, false), ErrorCode::InvalidArgument,
               "V4L2 colorspace 13: not a value of enum v4l2_colorspace (0 to 12, linux/videodev2.h)");
  EXPECT_ERROR(colorimetry_from_v4l2({0xFFFFFFFFu, 0, 0, 0}, false), ErrorCode::InvalidArgument,
               "V4L2 colorspace 4294967295: not a value of enum v4l2_colorspace");
  EXPECT_ERROR(colorimetry_from_v4l2({V4L2_COLORSPACE_BT878, 0, 0, 0}, false), ErrorCode::InvalidArgument,
               "V4L2 colorspace 4 (V4L2_COLORSPACE_BT878): deprecated, no driver returns it");
  EXPECT_ERROR(colorimetry_from_v4l2({V4L2_COLORSPACE_SRGB, 0, 0, V4L2_XFER_FUNC_SMPTE2084 + 1}, false),
               ErrorCode::InvalidArgument, "V4L2 xfer_func 8: not a value of enum v4l2_xfer_func (0 to 7");
  EXPECT_ERROR(colorimetry_from_v4l2({V4L2_COLORSPACE_SRGB, V4L2_YCBCR_ENC_SMPTE240M + 1, 0, 0}, false),
               ErrorCode::InvalidArgument, "V4L2 ycbcr_enc 9: not a value of enum v4l2_ycbcr_encoding (0 to 8");
  EXPECT_ERROR(colorimetry_from_v4l2({V4L2_COLORSPACE_SRGB, V4L2_HSV_ENC_180, 0, 0}, false), ErrorCode::InvalidArgument,
               "V4L2 ycbcr_enc 128 (V4L2_HSV_ENC_180): an HSV encoding, and no pixel format here is HSV");
  EXPECT_ERROR(colorimetry_from_v4l2({V4L2_COLORSPACE_SRGB, V4L2_HSV_ENC_256, 0, 0}, true), ErrorCode::InvalidArgument,
               "V4L2 ycbcr_enc 129 (V4L2_HSV_ENC_256)");
  EXPECT_ERROR(colorimetry_from_v4l2({V4L2_COLORSPACE_SRGB, 0, V4L2_QUANTIZATION_LIM_RANGE + 1, 0}, false),
               ErrorCode::InvalidArgument, "V4L2 quantization 3: not a value of enum v4l2_quantization (0 to 2");
}

TEST(Colorimetry, EveryEnumValueHasItsOwnName) {
  const auto check = [](auto last, auto name_fn, std::initializer_list<const char*> expected) {
    using E = decltype(last);
    std::set<std::string> seen;
    std::size_t i = 0;
    for (const char* want : expected) {
      EXPECT_EQ(name_fn(static_cast<E>(i)), want);
      seen.insert(std::string(name_fn(static_cast<E>(i))));
      ++i;
    }
    EXPECT_EQ(i, static_cast<std::size_t>(last) + 1);  // every enumerator listed
    EXPECT_EQ(seen.size(), i);
    EXPECT_EQ(name_fn(static_cast<E>(i)), "invalid");
    EXPECT_EQ(name_fn(static_cast<E>(255)), "invalid");
  };
  check(CP::Bt470M, color_primaries_name,
        {"unspecified", "bt709", "bt470bg", "smpte170m", "bt2020", "dci_p3", "display_p3", "adobe_rgb", "bt470m"});
  check(TF::Smpte240M, transfer_function_name,
        {"unspecified", "bt709", "srgb", "linear", "smpte2084", "arib_std_b67", "adobe_rgb", "dci_p3", "smpte240m"});
  check(YM::Identity, ycbcr_matrix_name,
        {"unspecified", "bt601", "bt709", "bt2020", "bt2020_constant", "smpte240m", "identity"});
  check(CR::Limited, color_range_name, {"unspecified", "full", "limited"});
}

}  // namespace
