// SPDX-License-Identifier: Apache-2.0
// Umbrella header: the whole public C++ API.
#pragma once

#include <edgetensor/cuda.h>
#include <edgetensor/dlpack.h>
#include <edgetensor/dtype.h>
#include <edgetensor/error.h>
#include <edgetensor/dmabuf.h>
#include <edgetensor/fence.h>
#include <edgetensor/frame.h>
#include <edgetensor/gl.h>
#include <edgetensor/image.h>
#include <edgetensor/channel.h>
#include <edgetensor/ipc.h>
#include <edgetensor/log.h>
#include <edgetensor/map.h>
#include <edgetensor/memory.h>
#include <edgetensor/pixel_format.h>
#include <edgetensor/pool.h>
#include <edgetensor/probe.h>
#include <edgetensor/quantization.h>
#include <edgetensor/shared_fd.h>
#include <edgetensor/shm.h>
#include <edgetensor/tensor.h>
#include <edgetensor/unique_fd.h>
#include <edgetensor/version.h>
