// SPDX-License-Identifier: Apache-2.0
// Colorimetry names and the conversion from and to V4L2's four colorimetry fields (image.h).
//
// Facts: Linux UAPI include/uapi/linux/videodev2.h (enum v4l2_colorspace, v4l2_xfer_func,
// v4l2_ycbcr_encoding, v4l2_quantization and the V4L2_MAP_*_DEFAULT macros) and the kernel's V4L2
// documentation, "Detailed Colorspace Descriptions" (each colorspace's chromaticities). The values are
// stable UAPI, spelled here so this file needs no platform header; tests/unit/image/colorimetry_test.cpp
// checks each one, and each default, against <linux/videodev2.h>.
#include <edgetensor/image.h>

#include <array>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace {

using CP = ColorPrimaries;
using TF = TransferFunction;
using YM = YcbcrMatrix;
using CR = ColorRange;

// enum v4l2_colorspace
constexpr std::uint32_t kCsDefault = 0, kCsSmpte170m = 1, kCsSmpte240m = 2, kCsRec709 = 3, kCsBt878 = 4,
                        kCs470SystemM = 5, kCs470SystemBg = 6, kCsJpeg = 7, kCsSrgb = 8, kCsOprgb = 9, kCsBt2020 = 10,
                        kCsRaw = 11, kCsDciP3 = 12;
// enum v4l2_xfer_func
constexpr std::uint32_t kXferDefault = 0, kXfer709 = 1, kXferSrgb = 2, kXferOprgb = 3, kXferSmpte240m = 4,
                        kXferNone = 5, kXferDciP3 = 6;
// enum v4l2_ycbcr_encoding; enum v4l2_hsv_encoding shares the field (values from 128)
constexpr std::uint32_t kEncDefault = 0, kEnc601 = 1, kEnc709 = 2, kEncBt2020 = 6, kEncSmpte240m = 8,
                        kHsvEnc180 = 128, kHsvEnc256 = 129;
// enum v4l2_quantization
constexpr std::uint32_t kQuantDefault = 0, kQuantFull = 1, kQuantLim = 2;

// Colorspaces (index == value): primaries from the documentation's chromaticity tables; the default
// transfer and encoding as V4L2_MAP_XFER_FUNC_DEFAULT and V4L2_MAP_YCBCR_ENC_DEFAULT give them.
struct ColorspaceRow {
  std::string_view name;
  CP primaries;
  std::uint32_t xfer;
  std::uint32_t enc;
};
constexpr std::array<ColorspaceRow, 13> kColorspaces = {{
    {"DEFAULT", CP::Unspecified, kXferDefault, kEncDefault},  // defaults stay Unspecified (image.h)
    {"SMPTE170M", CP::Smpte170M, kXfer709, kEnc601},
    {"SMPTE240M", CP::Smpte170M, kXferSmpte240m, kEncSmpte240m},  // "identical to the SMPTE 170M colorspace"
    {"REC709", CP::Bt709, kXfer709, kEnc709},
    {"BT878", CP::Unspecified, kXferDefault, kEncDefault},  // deprecated, "no driver will ever return this"
    {"470_SYSTEM_M", CP::Bt470M, kXfer709, kEnc601},        // NTSC 1953, illuminant C
    {"470_SYSTEM_BG", CP::Bt470Bg, kXfer709, kEnc601},      // EBU Tech 3213: the BT.470 B/G primaries
    {"JPEG", CP::Bt709, kXferSrgb, kEnc601},                // "identical to sRGB"
    {"SRGB", CP::Bt709, kXferSrgb, kEnc601},                // "identical to the Rec. 709 colorspace"
    {"OPRGB", CP::AdobeRgb, kXferOprgb, kEnc601},
    {"BT2020", CP::Bt2020, kXfer709, kEncBt2020},
    {"RAW", CP::Unspecified, kXferNone, kEnc601},  // the device's own primaries: unknown to us
    {"DCI_P3", CP::DciP3, kXferDciP3, kEnc709},
}};
static_assert(kColorspaces[kCsBt878].name == "BT878" && kColorspaces[kCsRaw].name == "RAW" &&
              kColorspaces[kCsDciP3].name == "DCI_P3");  // index == value

// The other three fields (index == value). In to_v4l2 the first row holding a value wins, so the
// aliases (XV601, XV709 and SYCC after 601 and 709) are never written.
template <class E>
struct Row {
  std::string_view name;
  E value;
};
constexpr std::array<Row<TF>, 8> kXfers = {{{"DEFAULT", TF::Unspecified},
                                            {"709", TF::Bt709},
                                            {"SRGB", TF::Srgb},
                                            {"OPRGB", TF::AdobeRgb},
                                            {"SMPTE240M", TF::Smpte240M},
                                            {"NONE", TF::Linear},
                                            {"DCI_P3", TF::DciP3},
                                            {"SMPTE2084", TF::Smpte2084}}};
constexpr std::array<Row<YM>, 9> kEncs = {{{"DEFAULT", YM::Unspecified},
                                           {"601", YM::Bt601},
                                           {"709", YM::Bt709},
                                           {"XV601", YM::Bt601},  // extended gamut: lossy (image.h)
                                           {"XV709", YM::Bt709},
                                           {"SYCC", YM::Bt601},  // "identical to ENC_601"
                                           {"BT2020", YM::Bt2020},
                                           {"BT2020_CONST_LUM", YM::Bt2020Constant},
                                           {"SMPTE240M", YM::Smpte240M}}};
constexpr std::array<Row<CR>, 3> kQuants = {{{"DEFAULT", CR::Unspecified}, {"FULL_RANGE", CR::Full}, {"LIM_RANGE", CR::Limited}}};

// Names of our enums (index == value).
constexpr std::array<std::string_view, 9> kPrimariesNames = {"unspecified", "bt709",      "bt470bg",   "smpte170m", "bt2020",
                                                             "dci_p3",      "display_p3", "adobe_rgb", "bt470m"};
constexpr std::array<std::string_view, 9> kTransferNames = {"unspecified", "bt709",     "srgb",   "linear",   "smpte2084",
                                                            "arib_std_b67", "adobe_rgb", "dci_p3", "smpte240m"};
constexpr std::array<std::string_view, 7> kMatrixNames = {"unspecified", "bt601",     "bt709",   "bt2020",
                                                          "bt2020_constant", "smpte240m", "identity"};
constexpr std::array<std::string_view, 3> kRangeNames = {"unspecified", "full", "limited"};

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, E value) noexcept {
  auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : "invalid";
}

// A V4L2 field's value outside its enum. `last` is the enum's largest value.
Unexpected not_in_enum(std::string_view field, std::uint32_t value, std::string_view enum_name, std::size_t last) {
  return fail(ErrorCode::InvalidArgument,
              text::format("V4L2 {} {}: not a value of enum {} (0 to {}, linux/videodev2.h)", field, value, enum_name,
                           last));
}

// Our value -> the first V4L2 code holding it. Errors: InvalidArgument outside our enum, Unsupported
// when V4L2 has no code for it.
template <class E, std::size_t N>
Result<std::uint32_t> v4l2_code(const std::array<Row<E>, N>& rows, E value, std::string_view field,
                                std::string_view name, std::string_view v4l2_field) {
  if (name == "invalid")
    return fail(ErrorCode::InvalidArgument, text::format("colorimetry {} {}: not a value of its enum", field,
                                                         static_cast<unsigned>(value)));
  for (std::size_t i = 0; i < N; ++i)
    if (rows[i].value == value) return static_cast<std::uint32_t>(i);
  return fail(ErrorCode::Unsupported,
              text::format("colorimetry {} {}: V4L2 has no {} value for it (linux/videodev2.h)", field, name,
                           v4l2_field));
}

}  // namespace

std::string_view color_primaries_name(ColorPrimaries primaries) noexcept { return name_of(kPrimariesNames, primaries); }
std::string_view transfer_function_name(TransferFunction transfer) noexcept {
  return name_of(kTransferNames, transfer);
}
std::string_view ycbcr_matrix_name(YcbcrMatrix matrix) noexcept { return name_of(kMatrixNames, matrix); }
std::string_view color_range_name(ColorRange range) noexcept { return name_of(kRangeNames, range); }

Result<Colorimetry> colorimetry_from_v4l2(const V4l2Colorimetry& v4l2, bool is_rgb) {
  if (v4l2.colorspace >= kColorspaces.size())
    return not_in_enum("colorspace", v4l2.colorspace, "v4l2_colorspace", kColorspaces.size() - 1);
  if (v4l2.colorspace == kCsBt878)
    return fail(ErrorCode::InvalidArgument,
                text::format("V4L2 colorspace {} (V4L2_COLORSPACE_BT878): deprecated, no driver returns it", kCsBt878));
  if (v4l2.xfer_func >= kXfers.size())
    return not_in_enum("xfer_func", v4l2.xfer_func, "v4l2_xfer_func", kXfers.size() - 1);
  if (v4l2.ycbcr_enc == kHsvEnc180 || v4l2.ycbcr_enc == kHsvEnc256)
    return fail(ErrorCode::InvalidArgument,
                text::format("V4L2 ycbcr_enc {} (V4L2_HSV_ENC_{}): an HSV encoding, and no pixel format here is HSV",
                             v4l2.ycbcr_enc, v4l2.ycbcr_enc == kHsvEnc180 ? 180 : 256));
  if (v4l2.ycbcr_enc >= kEncs.size())
    return not_in_enum("ycbcr_enc", v4l2.ycbcr_enc, "v4l2_ycbcr_encoding", kEncs.size() - 1);
  if (v4l2.quantization >= kQuants.size())
    return not_in_enum("quantization", v4l2.quantization, "v4l2_quantization", kQuants.size() - 1);

  const ColorspaceRow& cs = kColorspaces[v4l2.colorspace];
  const bool resolve = v4l2.colorspace != kCsDefault;  // under colorspace DEFAULT nothing is known
  const std::uint32_t xfer = v4l2.xfer_func == kXferDefault && resolve ? cs.xfer : v4l2.xfer_func;
  const std::uint32_t enc = v4l2.ycbcr_enc == kEncDefault && resolve ? cs.enc : v4l2.ycbcr_enc;
  std::uint32_t quant = v4l2.quantization;
  if (quant == kQuantDefault && resolve)  // V4L2_MAP_QUANTIZATION_DEFAULT
    quant = is_rgb || v4l2.colorspace == kCsJpeg ? kQuantFull : kQuantLim;
  // RGB data has no YCbCr matrix: a DEFAULT encoding of an RGB format is Identity whatever the colorspace
  // (GStreamer's v4l2src gives GST_VIDEO_COLOR_MATRIX_RGB there); an explicit one is kept.
  const YcbcrMatrix matrix = is_rgb && v4l2.ycbcr_enc == kEncDefault ? YcbcrMatrix::Identity : kEncs[enc].value;
  return Colorimetry{cs.primaries, kXfers[xfer].value, matrix, kQuants[quant].value};
}

Result<V4l2Colorimetry> colorimetry_to_v4l2(const Colorimetry& colorimetry) {
  V4l2Colorimetry v4l2;
  switch (colorimetry.primaries) {
    case CP::Unspecified: v4l2.colorspace = kCsDefault; break;
    case CP::Bt709: v4l2.colorspace = colorimetry.transfer == TF::Srgb ? kCsSrgb : kCsRec709; break;
    case CP::Bt470Bg: v4l2.colorspace = kCs470SystemBg; break;
    case CP::Smpte170M: v4l2.colorspace = colorimetry.transfer == TF::Smpte240M ? kCsSmpte240m : kCsSmpte170m; break;
    case CP::Bt2020: v4l2.colorspace = kCsBt2020; break;
    case CP::DciP3: v4l2.colorspace = kCsDciP3; break;
    case CP::AdobeRgb: v4l2.colorspace = kCsOprgb; break;
    case CP::Bt470M: v4l2.colorspace = kCs470SystemM; break;
    case CP::DisplayP3:
      return fail(ErrorCode::Unsupported,
                  "colorimetry primaries display_p3: V4L2 has no colorspace for them (V4L2_COLORSPACE_DCI_P3 has "
                  "the DCI white point, Display P3 has D65)");
    default:
      return fail(ErrorCode::InvalidArgument,
                  text::format("colorimetry primaries {}: not a value of its enum",
                               static_cast<unsigned>(colorimetry.primaries)));
  }
  ET_TRY_ASSIGN(v4l2.xfer_func, v4l2_code(kXfers, colorimetry.transfer, "transfer",
                                          transfer_function_name(colorimetry.transfer), "xfer_func"));
  // RGB data has no YCbCr matrix, and V4L2 no identity encoding: DEFAULT leaves the field to the colorspace.
  if (colorimetry.matrix == YM::Identity) {
    v4l2.ycbcr_enc = kEncDefault;
  } else {
    ET_TRY_ASSIGN(v4l2.ycbcr_enc, v4l2_code(kEncs, colorimetry.matrix, "matrix",
                                            ycbcr_matrix_name(colorimetry.matrix), "ycbcr_enc"));
  }
  ET_TRY_ASSIGN(v4l2.quantization, v4l2_code(kQuants, colorimetry.range, "range", color_range_name(colorimetry.range),
                                             "quantization"));
  return v4l2;
}

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
