// SPDX-License-Identifier: Apache-2.0
#include "v4l2_device.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cerrno>
#include <cstring>

namespace et_test::v4l2 {
namespace {

// ioctl, retried on EINTR (a signal during a blocking V4L2 call).
int xioctl(int fd, unsigned long request, void* arg) {
  int r;
  do r = ::ioctl(fd, request, arg);
  while (r < 0 && errno == EINTR);
  return r;
}

std::string errno_text(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

}  // namespace

std::string fourcc_text(std::uint32_t code) {
  std::string s;
  for (int i = 0; i < 4; ++i) s += static_cast<char>((code >> (8 * i)) & 0xFF);
  return s;
}

std::vector<Node> find_vivid_capture_nodes() {
  std::vector<std::string> paths;
  if (DIR* d = ::opendir("/dev")) {
    while (const dirent* e = ::readdir(d))
      if (std::strncmp(e->d_name, "video", 5) == 0) paths.push_back(std::string("/dev/") + e->d_name);
    ::closedir(d);
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Node> nodes;
  for (const auto& path : paths) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    v4l2_capability cap{};
    const bool ok = xioctl(fd, VIDIOC_QUERYCAP, &cap) == 0;
    ::close(fd);
    if (!ok || std::strcmp(reinterpret_cast<const char*>(cap.driver), "vivid") != 0) continue;
    // device_caps describe this node; capabilities the whole device (V4L2 spec, VIDIOC_QUERYCAP).
    const std::uint32_t caps = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities;
    const std::string card = reinterpret_cast<const char*>(cap.card);
    if (caps & V4L2_CAP_VIDEO_CAPTURE) nodes.push_back({path, card, false});
    if (caps & V4L2_CAP_VIDEO_CAPTURE_MPLANE) nodes.push_back({path, card, true});
  }
  return nodes;
}

Capture::~Capture() {
  stop();
  if (fd_ >= 0) ::close(fd_);
}

std::uint32_t Capture::buf_type() const {
  return multiplanar_ ? V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE : V4L2_BUF_TYPE_VIDEO_CAPTURE;
}

std::string Capture::open(const Node& node) {
  fd_ = ::open(node.path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) return errno_text(("open " + node.path).c_str(), errno);
  multiplanar_ = node.multiplanar;
  // Input 0 of vivid is its webcam (vivid.rst, "Video Capture"): fixed sizes 320x180, 640x360, 1280x720.
  int input = 0;
  if (xioctl(fd_, VIDIOC_S_INPUT, &input) != 0) return errno_text("VIDIOC_S_INPUT 0", errno);
  return "";
}

std::string Capture::set_format(std::uint32_t pixelformat, std::uint32_t width, std::uint32_t height,
                                std::uint32_t bytesperline) {
  v4l2_format f{};
  f.type = buf_type();
  if (multiplanar_) {
    auto& mp = f.fmt.pix_mp;
    mp.pixelformat = pixelformat;
    mp.width = width;
    mp.height = height;
    mp.field = V4L2_FIELD_NONE;
    mp.plane_fmt[0].bytesperline = bytesperline;
  } else {
    auto& p = f.fmt.pix;
    p.pixelformat = pixelformat;
    p.width = width;
    p.height = height;
    p.field = V4L2_FIELD_NONE;
    p.bytesperline = bytesperline;
  }
  if (xioctl(fd_, VIDIOC_S_FMT, &f) != 0) return errno_text("VIDIOC_S_FMT", errno);
  format_ = Format{};
  format_.multiplanar = multiplanar_;
  if (multiplanar_) {
    const auto& mp = f.fmt.pix_mp;
    format_.pixelformat = mp.pixelformat;
    format_.width = mp.width;
    format_.height = mp.height;
    format_.field = mp.field;
    for (unsigned i = 0; i < mp.num_planes && i < VIDEO_MAX_PLANES; ++i)
      format_.planes.push_back({mp.plane_fmt[i].bytesperline, mp.plane_fmt[i].sizeimage});
    format_.colorspace = mp.colorspace;
    format_.ycbcr_enc = mp.ycbcr_enc;
    format_.quantization = mp.quantization;
    format_.xfer_func = mp.xfer_func;
  } else {
    const auto& p = f.fmt.pix;
    format_.pixelformat = p.pixelformat;
    format_.width = p.width;
    format_.height = p.height;
    format_.field = p.field;
    format_.planes.push_back({p.bytesperline, p.sizeimage});
    format_.colorspace = p.colorspace;
    format_.ycbcr_enc = p.ycbcr_enc;
    format_.quantization = p.quantization;
    format_.xfer_func = p.xfer_func;
  }
  if (format_.pixelformat != pixelformat)
    return "the driver chose " + fourcc_text(format_.pixelformat) + " instead of " + fourcc_text(pixelformat);
  if (format_.planes.empty()) return "the driver reported no planes";
  return "";
}

std::string Capture::start(std::uint32_t buffer_count) {
  v4l2_requestbuffers req{};
  req.count = buffer_count;
  req.type = buf_type();
  req.memory = V4L2_MEMORY_MMAP;
  if (xioctl(fd_, VIDIOC_REQBUFS, &req) != 0) return errno_text("VIDIOC_REQBUFS", errno);
  if (req.count == 0) return "VIDIOC_REQBUFS gave 0 buffers";
  buffers_.assign(req.count, {});
  for (std::uint32_t i = 0; i < req.count; ++i) {
    std::array<v4l2_plane, VIDEO_MAX_PLANES> planes{};
    v4l2_buffer b{};
    b.type = buf_type();
    b.memory = V4L2_MEMORY_MMAP;
    b.index = i;
    if (multiplanar_) {
      b.m.planes = planes.data();
      b.length = VIDEO_MAX_PLANES;
    }
    if (xioctl(fd_, VIDIOC_QUERYBUF, &b) != 0) return errno_text("VIDIOC_QUERYBUF", errno);
    const std::uint32_t n = multiplanar_ ? b.length : 1;
    if (n != format_.planes.size())
      return "buffer " + std::to_string(i) + " has " + std::to_string(n) + " planes, the format " +
             std::to_string(format_.planes.size());
    for (std::uint32_t p = 0; p < n; ++p) {
      Mapped m;
      m.length = multiplanar_ ? planes[p].length : b.length;
      const off_t offset = multiplanar_ ? planes[p].m.mem_offset : b.m.offset;
      m.data = ::mmap(nullptr, m.length, PROT_READ, MAP_SHARED, fd_, offset);
      if (m.data == MAP_FAILED) return errno_text("mmap of a V4L2 buffer", errno);
      v4l2_exportbuffer ex{};
      ex.type = buf_type();
      ex.index = i;
      ex.plane = p;
      ex.flags = O_RDWR | O_CLOEXEC;
      const bool exported = xioctl(fd_, VIDIOC_EXPBUF, &ex) == 0;
      const int err = errno;
      m.dmabuf_fd = exported ? ex.fd : -1;
      buffers_[i].push_back(m);
      if (!exported) return errno_text("VIDIOC_EXPBUF", err);
    }
    if (xioctl(fd_, VIDIOC_QBUF, &b) != 0) return errno_text("VIDIOC_QBUF", errno);
  }
  auto type = static_cast<int>(buf_type());
  if (xioctl(fd_, VIDIOC_STREAMON, &type) != 0) return errno_text("VIDIOC_STREAMON", errno);
  streaming_ = true;
  return "";
}

std::string Capture::next(Frame& frame, int timeout_ms) {
  pollfd pfd{fd_, POLLIN, 0};
  const int r = ::poll(&pfd, 1, timeout_ms);
  if (r < 0) return errno_text("poll", errno);
  if (r == 0) return "no frame within " + std::to_string(timeout_ms) + " ms";
  std::array<v4l2_plane, VIDEO_MAX_PLANES> planes{};
  v4l2_buffer b{};
  b.type = buf_type();
  b.memory = V4L2_MEMORY_MMAP;
  if (multiplanar_) {
    b.m.planes = planes.data();
    b.length = VIDEO_MAX_PLANES;
  }
  if (xioctl(fd_, VIDIOC_DQBUF, &b) != 0) return errno_text("VIDIOC_DQBUF", errno);
  if (b.index >= buffers_.size()) return "VIDIOC_DQBUF gave buffer " + std::to_string(b.index);
  if (b.flags & V4L2_BUF_FLAG_ERROR) return "buffer " + std::to_string(b.index) + " came back with V4L2_BUF_FLAG_ERROR";
  frame = Frame{};
  frame.index = b.index;
  frame.sequence = b.sequence;
  const auto& mapped = buffers_[b.index];
  for (std::size_t p = 0; p < mapped.size(); ++p) {
    FramePlane fp;
    fp.mmap_bytes = {static_cast<const std::uint8_t*>(mapped[p].data), mapped[p].length};
    fp.dmabuf_fd = mapped[p].dmabuf_fd;
    fp.length = static_cast<std::uint32_t>(mapped[p].length);
    fp.bytesused = multiplanar_ ? planes[p].bytesused : b.bytesused;
    fp.data_offset = multiplanar_ ? planes[p].data_offset : 0;
    if (fp.bytesused > fp.length || fp.data_offset > fp.bytesused)
      return "plane " + std::to_string(p) + ": bytesused " + std::to_string(fp.bytesused) + ", data_offset " +
             std::to_string(fp.data_offset) + ", length " + std::to_string(fp.length);
    frame.planes.push_back(fp);
  }
  return "";
}

std::string Capture::requeue(const Frame& frame) {
  std::array<v4l2_plane, VIDEO_MAX_PLANES> planes{};
  v4l2_buffer b{};
  b.type = buf_type();
  b.memory = V4L2_MEMORY_MMAP;
  b.index = frame.index;
  if (multiplanar_) {
    b.m.planes = planes.data();
    b.length = static_cast<std::uint32_t>(frame.planes.size());
  }
  if (xioctl(fd_, VIDIOC_QBUF, &b) != 0) return errno_text("VIDIOC_QBUF", errno);
  return "";
}

void Capture::stop() noexcept {
  if (fd_ < 0) return;
  if (streaming_) {
    auto type = static_cast<int>(buf_type());
    (void)xioctl(fd_, VIDIOC_STREAMOFF, &type);
    streaming_ = false;
  }
  for (auto& planes : buffers_)
    for (auto& m : planes) {
      if (m.data && m.data != MAP_FAILED) ::munmap(m.data, m.length);
      if (m.dmabuf_fd >= 0) ::close(m.dmabuf_fd);
    }
  if (!buffers_.empty()) {
    v4l2_requestbuffers req{};
    req.type = buf_type();
    req.memory = V4L2_MEMORY_MMAP;
    (void)xioctl(fd_, VIDIOC_REQBUFS, &req);
    buffers_.clear();
  }
}

std::string compare_dmabuf_with_mmap(const FramePlane& plane, std::size_t begin, std::size_t end) {
  if (begin > end || end > plane.length)
    return "range [" + std::to_string(begin) + ", " + std::to_string(end) + ") is outside the plane's " +
           std::to_string(plane.length) + " bytes";
  const off_t size = ::lseek(plane.dmabuf_fd, 0, SEEK_END);  // a DMA-BUF's size (dma-buf.rst)
  if (size < static_cast<off_t>(plane.length))
    return "the exported DMA-BUF has " + std::to_string(size) + " bytes, the plane " + std::to_string(plane.length);
  void* data = ::mmap(nullptr, plane.length, PROT_READ, MAP_SHARED, plane.dmabuf_fd, 0);
  if (data == MAP_FAILED) return errno_text("mmap of the exported DMA-BUF", errno);
  dma_buf_sync sync{DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ};
  std::string result;
  if (xioctl(plane.dmabuf_fd, DMA_BUF_IOCTL_SYNC, &sync) != 0) {
    result = errno_text("DMA_BUF_IOCTL_SYNC START", errno);
  } else {
    const auto* d = static_cast<const std::uint8_t*>(data);
    const auto mismatch = std::mismatch(d + begin, d + end, plane.mmap_bytes.data() + begin);
    if (mismatch.first != d + end)
      result = "byte " + std::to_string(mismatch.first - d) + " differs: DMA-BUF " +
               std::to_string(*mismatch.first) + ", V4L2 mmap " + std::to_string(*mismatch.second);
    sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
    if (xioctl(plane.dmabuf_fd, DMA_BUF_IOCTL_SYNC, &sync) != 0 && result.empty())
      result = errno_text("DMA_BUF_IOCTL_SYNC END", errno);
  }
  ::munmap(data, plane.length);
  return result;
}

std::size_t distinct_values(std::span<const std::uint8_t> bytes) {
  std::bitset<256> seen;
  for (const auto b : bytes) seen.set(b);
  return seen.count();
}

}  // namespace et_test::v4l2
