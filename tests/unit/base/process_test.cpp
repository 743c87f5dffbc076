// SPDX-License-Identifier: Apache-2.0
// The process token (src/base/process.h): stable within a process, different in every fork() child.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "base/process.h"

namespace {

using edgetensor::detail::forked_since;
using edgetensor::detail::process_token;
using edgetensor::detail::ProcessToken;

TEST(ProcessToken, StableWithinTheProcessOnEveryThread) {
  const ProcessToken token = process_token();
  EXPECT_EQ(process_token(), token);
  EXPECT_FALSE(forked_since(token));
  ProcessToken other = 0;
  std::thread([&other] { other = process_token(); }).join();
  EXPECT_EQ(other, token);
}

TEST(ProcessToken, ChangesInAForkChildAndItsChild) {
  const ProcessToken parent = process_token();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int bad = 0;
    const ProcessToken child = process_token();
    if (!forked_since(parent) || child == parent) bad |= 1;
    if (forked_since(child)) bad |= 2;
    pid_t grandchild = ::fork();
    if (grandchild == 0) ::_exit(forked_since(child) && forked_since(parent) ? 0 : 1);
    int status = 0;
    if (grandchild < 0 || ::waitpid(grandchild, &status, 0) != grandchild || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
      bad |= 4;
    ::_exit(bad);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failure bits: 1 child kept the token, 2 child unstable, 4 grandchild";
  EXPECT_FALSE(forked_since(parent)) << "the parent's token never changes";
}

}  // namespace
