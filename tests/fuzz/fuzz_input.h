// SPDX-License-Identifier: Apache-2.0
// The fuzz targets' input: raw messages, each with the fds the input asks for, sent on one end of an
// AF_UNIX SOCK_SEQPACKET pair; the target then receives on the other end (tests/fuzz/README.md).
//
//   input    := flags:u8 message*                  (at most kMaxMessages messages; the rest ignored)
//   flags    bit 0: close the sending end after the messages (the receiver then reads the end)
//   message  := nfds:u8 length:u16le fd_spec{nfds % 8} bytes{length}   (cut at the input's end)
//   fd_spec  := kind:u8 size:u16le                 (memfd size = size x 64 B, at most 4 MiB)
//   kind % 8 := 0 memfd sealed SHRINK|GROW (what edgetensor sends) | 1 memfd, unsealed (sealing
//               allowed) | 2 memfd sealed SHRINK|GROW|WRITE (read-only) | 3 a pipe's read end |
//               4 /dev/null | 5 an AF_UNIX socket | 6 O_PATH of /dev/null | 7 a directory (/)
//
// Every fd the harness makes is closed once sent (the kernel holds its copy in flight), and the
// harness aborts when the process's open-fd count after an input differs from before it: a leaked
// fd is a failure LeakSanitizer cannot see.
#pragma once

#include <edgetensor/unique_fd.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace et_fuzz {

inline constexpr std::size_t kMaxMessages = 16;
inline constexpr std::size_t kFdSizeUnit = 64;

enum class FdKind : std::uint8_t {
  SealedMemfd = 0,
  UnsealedMemfd = 1,
  ReadOnlyMemfd = 2,
  Pipe = 3,
  DevNull = 4,
  Socket = 5,
  OPath = 6,
  Directory = 7,
};

struct FdSpec {
  FdKind kind = FdKind::SealedMemfd;
  std::uint16_t size_units = 0;  // memfd bytes / kFdSizeUnit
};

struct Message {
  std::vector<FdSpec> fds;
  std::vector<std::byte> bytes;
};

struct Input {
  bool close_sender = false;
  std::vector<Message> messages;
};

/// Parses `data` (never fails: what does not fit is cut).
Input parse(std::span<const std::uint8_t> data);
/// The bytes parse() reads back as `input` (the corpus generator writes these).
std::vector<std::uint8_t> serialize(const Input& input);

/// Sends `input`'s messages on `sender` (one end of a connected SOCK_SEQPACKET pair), each with its fds
/// (made, sent and closed here), without waiting: a message the socket cannot take now is skipped.
/// Returns how many were sent; closes `sender` when the input says so.
std::size_t send_all(const Input& input, edgetensor::UniqueFd& sender);

/// A connected AF_UNIX SOCK_SEQPACKET pair (aborts if the kernel refuses one).
struct SocketPair {
  SocketPair();
  edgetensor::UniqueFd sender, receiver;
};

/// Reads the first and the last byte of `bytes` (a bad view or mapping faults here, under ASan too).
void touch(std::span<const std::byte> bytes);

/// Entries in /proc/self/fd.
int open_fd_count();
/// Aborts (a fuzzer crash) naming both counts when `after` differs from `before`.
void check_fds(int before, int after, const char* target);

/// One input of a receiving target: parses `data`, sends its messages on a new SocketPair and calls
/// `receive(receiver_end, receives)`, where `receives` is the messages sent plus one when the sender
/// closed; then check_fds over the whole input. Returns 0 (libFuzzer's "input done").
template <class Receive>
int run_input(std::span<const std::uint8_t> data, const char* target, Receive receive) {
  const int before = open_fd_count();
  {
    const Input input = parse(data);
    SocketPair p;
    const std::size_t sent = send_all(input, p.sender);
    receive(p.receiver, sent + (input.close_sender ? 1 : 0));
  }
  check_fds(before, open_fd_count(), target);
  return 0;
}

}  // namespace et_fuzz
