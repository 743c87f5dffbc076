// SPDX-License-Identifier: Apache-2.0
// Process identity across fork(): the one fork detector of the library (GL worker, CUDA runtime and
// per-object CUDA state all use it).
//
// An object that owns per-process state (a thread, a CUDA registration, an EGL context) records
// process_token() when it is made and, before touching that state, checks forked_since(token): in a
// fork() child the state belongs to the parent (its threads do not exist here, CUDA does not survive
// fork), so the child must fail fast or leave it alone.
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include <cstdint>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

using ProcessToken = std::uint32_t;

/// The calling process's token: changes in every fork() child (a pthread_atfork child handler,
/// registered on the first call, so every token ever handed out is covered). One relaxed atomic load
/// after the first call; any thread. A child made without fork()'s handlers (_Fork(), a raw clone
/// syscall) keeps its parent's token.
ProcessToken process_token() noexcept;

/// True when `token` was taken in another process, i.e. this process is a fork() child of it.
inline bool forked_since(ProcessToken token) noexcept { return process_token() != token; }

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
