// SPDX-License-Identifier: Apache-2.0
// A small V4L2 capture client for tests/hardware/v4l2_capture_test.cpp: finds vivid's capture nodes,
// sets a format, streams MMAP buffers and exports each buffer plane as a DMA-BUF (VIDIOC_EXPBUF).
// It uses the kernel UAPI directly (linux/videodev2.h; the ioctls as the V4L2 specification,
// "Streaming I/O (Memory Mapping)" and "VIDIOC_EXPBUF", describes them) and nothing of edgetensor, so
// it also serves the stand-alone V4L2-only build of the test (ET_V4L2_TEST_EDGETENSOR=0).
//
// Errors are returned as text ("" = success) so a test can ASSERT on them with the reason.
// Thread safety: none; one test uses one Capture.
#pragma once

#include <linux/videodev2.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace et_test::v4l2 {

/// A video capture node of the vivid driver.
struct Node {
  std::string path;  // "/dev/video0"
  std::string card;  // "vivid-000-vid-cap"
  bool multiplanar = false;
};

/// vivid's capture nodes: every /dev/video* whose VIDIOC_QUERYCAP driver is "vivid" and whose device
/// caps include V4L2_CAP_VIDEO_CAPTURE (multiplanar = false) or V4L2_CAP_VIDEO_CAPTURE_MPLANE (true).
std::vector<Node> find_vivid_capture_nodes();

/// The format the driver settled on (VIDIOC_S_FMT's answer), single- or multi-planar alike.
struct Format {
  bool multiplanar = false;
  std::uint32_t pixelformat = 0;
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint32_t field = 0;
  /// Per buffer plane (1 for single-planar): bytes per line and the plane's image size.
  struct Plane {
    std::uint32_t bytesperline = 0;
    std::uint32_t sizeimage = 0;
  };
  std::vector<Plane> planes;
  // enum v4l2_colorspace, v4l2_ycbcr_encoding, v4l2_quantization, v4l2_xfer_func values.
  std::uint32_t colorspace = 0;
  std::uint32_t ycbcr_enc = 0;
  std::uint32_t quantization = 0;
  std::uint32_t xfer_func = 0;
};

/// One buffer plane of a dequeued frame.
struct FramePlane {
  /// The plane through V4L2's own mapping (mmap of VIDIOC_QUERYBUF's offset), all `length` bytes.
  std::span<const std::uint8_t> mmap_bytes;
  /// The plane's DMA-BUF from VIDIOC_EXPBUF (owned by the Capture; valid until it is destroyed).
  int dmabuf_fd = -1;
  std::uint32_t length = 0;       // the buffer plane's size
  std::uint32_t bytesused = 0;    // bytes of payload, data_offset included (multi-planar)
  std::uint32_t data_offset = 0;  // where the image starts (multi-planar; 0 otherwise)
};

/// A dequeued frame; it stays the application's until Capture::requeue.
struct Frame {
  std::uint32_t index = 0;
  std::uint32_t sequence = 0;
  std::vector<FramePlane> planes;
};

std::string fourcc_text(std::uint32_t code);

/// An open capture node. Destruction stops streaming, unmaps, closes the exported fds and frees the
/// buffers (VIDIOC_REQBUFS count 0).
class Capture {
 public:
  Capture() = default;
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  ~Capture();

  std::string open(const Node& node);
  /// VIDIOC_S_FMT with this pixel format, size and bytes per line of the first plane (0 = the
  /// driver's choice; a driver may round it). The driver's answer lands in format().
  std::string set_format(std::uint32_t pixelformat, std::uint32_t width, std::uint32_t height,
                         std::uint32_t bytesperline = 0);
  const Format& format() const { return format_; }
  /// VIDIOC_REQBUFS (MMAP), then per buffer VIDIOC_QUERYBUF, mmap and VIDIOC_EXPBUF of every plane,
  /// VIDIOC_QBUF, and finally VIDIOC_STREAMON.
  std::string start(std::uint32_t buffer_count);
  /// Waits (poll) up to timeout_ms for a frame and dequeues it (VIDIOC_DQBUF).
  std::string next(Frame& frame, int timeout_ms);
  /// Gives the frame's buffer back to the driver (VIDIOC_QBUF).
  std::string requeue(const Frame& frame);
  std::uint32_t buffer_count() const { return static_cast<std::uint32_t>(buffers_.size()); }

 private:
  struct Mapped {
    void* data = nullptr;
    std::size_t length = 0;
    int dmabuf_fd = -1;
  };
  std::uint32_t buf_type() const;
  void stop() noexcept;

  int fd_ = -1;
  bool multiplanar_ = false;
  bool streaming_ = false;
  Format format_;
  std::vector<std::vector<Mapped>> buffers_;  // [buffer][plane]
};

/// Compares a buffer plane's DMA-BUF, mapped on its own (inside DMA_BUF_IOCTL_SYNC START/END for
/// reading), with V4L2's mapping of the same plane over [begin, end). "" when every byte matches.
std::string compare_dmabuf_with_mmap(const FramePlane& plane, std::size_t begin, std::size_t end);

/// Distinct byte values in `bytes` (a blank or unwritten frame has 1).
std::size_t distinct_values(std::span<const std::uint8_t> bytes);

}  // namespace et_test::v4l2
