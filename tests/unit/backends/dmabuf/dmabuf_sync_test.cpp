// SPDX-License-Identifier: Apache-2.0
// Pure sync logic: map modes to DMA_BUF_SYNC flags, and the EINTR/EAGAIN retry policy.
#include "backends/dmabuf/dmabuf_sync.h"

#include <linux/dma-buf.h>

#include <cerrno>

#include "support/test_support.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

TEST(DmaBufSync, FlagsMatchUapi) {
  EXPECT_EQ(sync_start_flags(MapMode::Read), DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
  EXPECT_EQ(sync_start_flags(MapMode::Write), DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);
  EXPECT_EQ(sync_start_flags(MapMode::ReadWrite), DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW);
  EXPECT_EQ(sync_end_flags(MapMode::Read), DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
  EXPECT_EQ(sync_end_flags(MapMode::ReadWrite), DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW);
  // Union of a reader and a writer in one bracket.
  auto both = static_cast<MapMode>(static_cast<unsigned>(MapMode::Read) | static_cast<unsigned>(MapMode::Write));
  EXPECT_EQ(sync_end_flags(both), DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW);
  // Never a sync without a direction (the kernel rejects it).
  EXPECT_EQ(sync_end_flags(static_cast<MapMode>(0)), DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
  for (MapMode m : {MapMode::Read, MapMode::Write, MapMode::ReadWrite}) {
    EXPECT_EQ(sync_start_flags(m) & ~DMA_BUF_SYNC_VALID_FLAGS_MASK, 0u);
    EXPECT_EQ(sync_end_flags(m) & ~DMA_BUF_SYNC_VALID_FLAGS_MASK, 0u);
  }
}

TEST(DmaBufSync, RetriesEintrAndEagainThenSucceeds) {
  int calls = 0;
  auto out = run_sync_with_retry([&] {
    ++calls;
    return calls == 1 ? EINTR : calls == 2 ? EAGAIN : 0;
  });
  EXPECT_EQ(out.err, 0);
  EXPECT_EQ(out.attempts, 3);
  EXPECT_EQ(calls, 3);
}

TEST(DmaBufSync, OtherErrorsAreNotRetried) {
  int calls = 0;
  auto out = run_sync_with_retry([&] {
    ++calls;
    return EIO;
  });
  EXPECT_EQ(out.err, EIO);
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(calls, 1);
}

TEST(DmaBufSync, EndlessEagainGivesUpInsteadOfHanging) {
  int calls = 0;
  auto out = run_sync_with_retry([&] {
    ++calls;
    return EAGAIN;
  });
  EXPECT_EQ(out.err, EAGAIN);
  EXPECT_EQ(out.attempts, kMaxSyncAttempts);
  EXPECT_EQ(calls, kMaxSyncAttempts);
}

}  // namespace
}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
