// SPDX-License-Identifier: Apache-2.0
// Copies and views allocate nothing, whatever the name's length and whatever metadata the
// tensor carries. This binary replaces the global operator new (its own binary, so no other test runs
// with it) and counts the allocations of the calling thread; the library's calls reach it too (the
// executable's definition interposes the shared library's references).
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "support/replace_operator_new.h"
#include "support/test_support.h"

namespace {
thread_local std::size_t t_allocations = 0;
}  // namespace

void* et_test_allocate(std::size_t n, std::size_t align) {
  ++t_allocations;
  return et_test_malloc(n, align);
}

using namespace edgetensor;

namespace {

// Allocations made by `f` on this thread.
template <class F>
std::size_t allocations_in(F f) {
  const std::size_t before = t_allocations;
  f();
  return t_allocations - before;
}

const std::string kLongName = "camera0/front/planar-rgb-with-every-kind-of-metadata";  // > any SSO buffer

// A planar RGB image [3, 2, 4] u8 with a long name, layout, colorimetry and per-channel quantization.
void image_with_everything(TensorDyn& out) {
  AllocateOptions o;
  o.name = kLongName;
  auto t = TensorDyn::allocate({3, 2, 4}, DType::U8, o);
  ASSERT_OK(t);
  auto layout = ImageLayout::make(4, 2, PixelFormat::PlanarRgb);
  ASSERT_OK(layout);
  ASSERT_OK(t->set_image_layout(*layout));
  t->set_colorimetry({ColorPrimaries::Bt709, TransferFunction::Srgb, YcbcrMatrix::Identity, ColorRange::Full});
  const float scales[] = {0.5f, 0.25f, 0.125f};
  const std::int32_t zero_points[] = {1, 2, 3};
  auto q = Quantization::per_axis(0, scales, zero_points);
  ASSERT_OK(q);
  ASSERT_OK(t->set_quantization(*q));
  out = std::move(*t);
}

}  // namespace

TEST(TensorAllocations, TheCounterSeesTheLibrarysAllocations) {
  // The positive control: without it a broken hook would pass every test below.
  EXPECT_GE(allocations_in([] { std::string s(100, 'x'); }), 1u);
  auto t = TensorDyn::allocate({4}, DType::U8);
  ASSERT_OK(t);
  EXPECT_GE(allocations_in([&] { t->set_name(kLongName); }), 1u) << "set_name builds a new metadata block";
  EXPECT_GE(allocations_in([&] { auto u = TensorDyn::allocate({4}, DType::U8); }), 1u);
}

TEST(TensorAllocations, CopiesAndViewsOfATensorWithEveryKindOfMetadataAllocateNothing) {
  TensorDyn image;
  ASSERT_NO_FATAL_FAILURE(image_with_everything(image));
  const TensorDyn& t = image;
  ASSERT_NE(t.image_layout(), nullptr);
  ASSERT_EQ(t.quantization().kind(), QuantizationKind::PerAxis);
  std::vector<std::pair<const char*, std::size_t>> counts;
  const auto count = [&](const char* what, auto f) { counts.emplace_back(what, allocations_in(f)); };
  counts.reserve(32);  // the bookkeeping itself must not allocate inside a measurement
  count("copy", [&] { TensorDyn c = t; });
  count("copy assignment", [&] {
    TensorDyn c;
    c = t;
  });
  count("move", [&] {
    TensorDyn c = t;
    TensorDyn d = std::move(c);
  });
  count("view same shape (layout kept)", [&] { auto v = t.view(0, {3, 2, 4}); });
  count("view narrower (layout dropped)", [&] { auto v = t.view(8, {4}); });
  count("batch(0) (per-axis -> per-tensor)", [&] { auto v = t.batch(0); });
  count("batch(2)", [&] { auto v = t.batch(2); });
  count("slice along the quantized axis", [&] { auto v = t.slice(0, 1, 3); });
  count("slice of another dimension", [&] { auto v = t.slice(1, 0, 1); });
  count("slice of a whole dimension (layout kept)", [&] { auto v = t.slice(2, 0, 4); });
  count("reshape [3, 8]", [&] { auto v = t.reshape({3, 8}); });
  count("reshape [24]", [&] { auto v = t.reshape({24}); });
  count("unsqueeze(0)", [&] { auto v = t.unsqueeze(0); });
  count("plane(1) (per-axis -> channel 1)", [&] { auto v = t.plane(1); });
  count("image_view", [&] { auto v = t.image_view(); });
  count("batch of a plane view", [&] {
    auto p = t.plane(2);
    auto v = p->batch(1);
  });
  count("clear_image_layout of a copy", [&] {
    TensorDyn c = t;
    c.clear_image_layout();
  });
  count("Tensor<u8> from, batch, reshape", [&] {
    auto typed = Tensor<std::uint8_t>::from(t);
    auto b = typed->batch(1);
    auto r = typed->reshape({24});
  });
  for (const auto& [what, n] : counts) EXPECT_EQ(n, 0u) << what;
  // The views did keep what the rule says (the counts above are not of failed calls).
  auto s = t.slice(0, 1, 3);
  ASSERT_OK(s);
  EXPECT_EQ(s->name(), kLongName);
  EXPECT_EQ(s->quantization().scales().size(), 2u);
  auto p = t.plane(1);
  ASSERT_OK(p);
  EXPECT_EQ(p->pixel_format(), PixelFormat::PlanarRgb);
  EXPECT_EQ(p->image_plane(), 1);
  EXPECT_EQ(p->colorimetry(), t.colorimetry());
  EXPECT_EQ(p->quantization().scales()[0], 0.25f);
  auto same = t.view(0, {3, 2, 4});
  ASSERT_OK(same);
  EXPECT_EQ(same->image_layout(), t.image_layout()) << "shared, not copied";
}

TEST(TensorAllocations, ViewsOfAnNv12ImageWithALongNameAllocateNothing) {
  AllocateOptions o;
  o.name = kLongName;
  auto t = TensorDyn::allocate_image(6, 4, PixelFormat::Nv12, {}, o);
  ASSERT_OK(t);
  auto q = Quantization::per_tensor(0.5f, 3);
  ASSERT_OK(q);
  ASSERT_OK(t->set_quantization(*q));
  std::size_t n = allocations_in([&] {
    auto y = t->plane(0);
    auto uv = t->plane(1);
    auto row = uv->batch(1);
    auto copy = *t;
    auto bytes = t->view(0, {t->shape()[0]});
  });
  EXPECT_EQ(n, 0u);
}
