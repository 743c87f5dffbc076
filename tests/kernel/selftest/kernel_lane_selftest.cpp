// Self-test of the kernel lane (tests/kernel/selftest.sh runs it through
// run-in-vm.sh): proves that the guest kernel has a usable DMA-BUF system heap
// and udmabuf, and that the lane's mounts, --env, --file and setpriv work.
// Not part of the library's tests; it uses only kernel UAPI headers.

#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/magic.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace {

constexpr std::size_t kSizeBytes = std::size_t{1} << 20;  // 1 MiB

// Owns one fd; enough for a test, no more.
class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) close(fd_);
    }
    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }

private:
    int fd_;
};

// Owns one shared mapping.
class Map {
public:
    Map(int fd, std::size_t size_bytes)
        : size_bytes_(size_bytes),
          addr_(mmap(nullptr, size_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) {}
    Map(const Map&) = delete;
    Map& operator=(const Map&) = delete;
    ~Map() {
        if (addr_ != MAP_FAILED) munmap(addr_, size_bytes_);
    }
    bool valid() const { return addr_ != MAP_FAILED; }
    std::uint8_t* bytes() const { return static_cast<std::uint8_t*>(addr_); }

private:
    std::size_t size_bytes_;
    void* addr_;
};

std::string errno_text() { return std::string(std::strerror(errno)) + " (errno " + std::to_string(errno) + ")"; }

bool is_char_device(const char* path) {
    struct stat st {};
    return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

// Brackets CPU access to a dma-buf as the dma-buf UAPI asks; retries EINTR
// and EAGAIN like real users must.
int sync_dma_buf(int fd, std::uint64_t flags) {
    struct dma_buf_sync arg {};
    arg.flags = flags;
    int ret;
    do {
        ret = ioctl(fd, DMA_BUF_IOCTL_SYNC, &arg);
    } while (ret < 0 && (errno == EINTR || errno == EAGAIN));
    return ret;
}

void fill(std::uint8_t* bytes, std::size_t size_bytes, std::uint8_t seed) {
    for (std::size_t i = 0; i < size_bytes; ++i) bytes[i] = static_cast<std::uint8_t>(i * 31u + seed);
}

std::size_t count_mismatches(const std::uint8_t* bytes, std::size_t size_bytes, std::uint8_t seed) {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < size_bytes; ++i) bad += bytes[i] != static_cast<std::uint8_t>(i * 31u + seed);
    return bad;
}

TEST(KernelLaneHardware, DmaHeapAndUdmabufDevicesExist) {
    EXPECT_TRUE(is_char_device("/dev/dma_heap/system")) << "/dev/dma_heap/system: " << errno_text();
    EXPECT_TRUE(is_char_device("/dev/udmabuf")) << "/dev/udmabuf: " << errno_text();
}

TEST(KernelLaneHardware, SystemHeapAllocatesMapsWritesAndReads) {
    Fd heap(open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(heap.valid()) << "open /dev/dma_heap/system: " << errno_text();

    dma_heap_allocation_data alloc{};
    alloc.len = kSizeBytes;
    alloc.fd_flags = O_RDWR | O_CLOEXEC;
    ASSERT_EQ(ioctl(heap.get(), DMA_HEAP_IOCTL_ALLOC, &alloc), 0) << "DMA_HEAP_IOCTL_ALLOC: " << errno_text();
    Fd buf(static_cast<int>(alloc.fd));
    ASSERT_TRUE(buf.valid());
    EXPECT_NE(fcntl(buf.get(), F_GETFD) & FD_CLOEXEC, 0) << "the dma-buf fd must be close-on-exec";
    EXPECT_EQ(lseek(buf.get(), 0, SEEK_END), static_cast<off_t>(kSizeBytes)) << "dma-buf size";

    Map map(buf.get(), kSizeBytes);
    ASSERT_TRUE(map.valid()) << "mmap dma-buf: " << errno_text();
    ASSERT_EQ(sync_dma_buf(buf.get(), DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE), 0) << errno_text();
    fill(map.bytes(), kSizeBytes, 7);
    ASSERT_EQ(sync_dma_buf(buf.get(), DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE), 0) << errno_text();

    // A second, independent mapping of the same buffer sees the data.
    Map again(buf.get(), kSizeBytes);
    ASSERT_TRUE(again.valid()) << "second mmap: " << errno_text();
    ASSERT_EQ(sync_dma_buf(buf.get(), DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ), 0) << errno_text();
    EXPECT_EQ(count_mismatches(again.bytes(), kSizeBytes, 7), 0u);
    ASSERT_EQ(sync_dma_buf(buf.get(), DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ), 0) << errno_text();
}

TEST(KernelLaneHardware, UdmabufWrapsSealedMemfd) {
    Fd dev(open("/dev/udmabuf", O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(dev.valid()) << "open /dev/udmabuf: " << errno_text();
    Fd memfd(memfd_create("et-kernel-lane", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    ASSERT_TRUE(memfd.valid()) << "memfd_create: " << errno_text();
    ASSERT_EQ(ftruncate(memfd.get(), kSizeBytes), 0) << errno_text();

    udmabuf_create create{};
    create.memfd = static_cast<std::uint32_t>(memfd.get());
    create.flags = UDMABUF_FLAGS_CLOEXEC;
    create.offset = 0;
    create.size = kSizeBytes;
    // udmabuf insists on F_SEAL_SHRINK, so the pages cannot vanish under it.
    errno = 0;
    EXPECT_LT(ioctl(dev.get(), UDMABUF_CREATE, &create), 0) << "UDMABUF_CREATE accepted an unsealed memfd";
    EXPECT_EQ(errno, EINVAL);

    ASSERT_EQ(fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0) << "F_ADD_SEALS: " << errno_text();
    Fd buf(ioctl(dev.get(), UDMABUF_CREATE, &create));
    ASSERT_TRUE(buf.valid()) << "UDMABUF_CREATE: " << errno_text();
    EXPECT_NE(fcntl(buf.get(), F_GETFD) & FD_CLOEXEC, 0) << "the udmabuf fd must be close-on-exec";

    // Writes through the memfd show through the dma-buf: same pages.
    Map through_memfd(memfd.get(), kSizeBytes);
    ASSERT_TRUE(through_memfd.valid()) << "mmap memfd: " << errno_text();
    fill(through_memfd.bytes(), kSizeBytes, 42);
    Map through_buf(buf.get(), kSizeBytes);
    ASSERT_TRUE(through_buf.valid()) << "mmap udmabuf: " << errno_text();
    ASSERT_EQ(sync_dma_buf(buf.get(), DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ), 0) << errno_text();
    EXPECT_EQ(count_mismatches(through_buf.bytes(), kSizeBytes, 42), 0u);
    ASSERT_EQ(sync_dma_buf(buf.get(), DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ), 0) << errno_text();
}

TEST(KernelLaneHardware, UdmabufHonoursSizeLimitFromKernelArgs) {
    // selftest.sh boots with udmabuf.size_limit_mb=8 to prove --kernel-args.
    FILE* param = std::fopen("/sys/module/udmabuf/parameters/size_limit_mb", "r");
    ASSERT_NE(param, nullptr) << errno_text();
    int limit_mb = -1;
    EXPECT_EQ(std::fscanf(param, "%d", &limit_mb), 1);
    std::fclose(param);
    ASSERT_EQ(limit_mb, 8);

    constexpr std::size_t kOverLimitBytes = std::size_t{16} << 20;
    Fd dev(open("/dev/udmabuf", O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(dev.valid()) << "open /dev/udmabuf: " << errno_text();
    Fd memfd(memfd_create("et-kernel-lane-big", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    ASSERT_TRUE(memfd.valid()) << "memfd_create: " << errno_text();
    ASSERT_EQ(ftruncate(memfd.get(), kOverLimitBytes), 0) << errno_text();
    ASSERT_EQ(fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0) << errno_text();
    udmabuf_create create{};
    create.memfd = static_cast<std::uint32_t>(memfd.get());
    create.flags = UDMABUF_FLAGS_CLOEXEC;
    create.size = kOverLimitBytes;
    Fd buf(ioctl(dev.get(), UDMABUF_CREATE, &create));
    EXPECT_FALSE(buf.valid()) << "a 16 MiB udmabuf passed an 8 MiB limit";
}

TEST(KernelLaneHardware, TmpAndDevShmAreTmpfs) {
    for (const char* path : {"/tmp", "/dev/shm"}) {
        struct statfs fs {};
        ASSERT_EQ(statfs(path, &fs), 0) << path << ": " << errno_text();
        EXPECT_EQ(static_cast<unsigned long>(fs.f_type), static_cast<unsigned long>(TMPFS_MAGIC)) << path;
    }
}

TEST(KernelLaneHardware, RunsAsRootAndEnvArrives) {
    EXPECT_EQ(geteuid(), 0u);
    const char* value = std::getenv("ET_KERNEL_LANE_SELFTEST_ENV");
    ASSERT_NE(value, nullptr) << "selftest.sh passes --env ET_KERNEL_LANE_SELFTEST_ENV=...";
    // selftest.sh sends this exact text, to prove quoting survives the trip.
    EXPECT_STREQ(value, "it's a \"quoted\" value with  spaces $HOME `x`");
}

// Runs a shell command; returns its exit status and stdout.
int run(const std::string& command, std::string& output) {
    output.clear();
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return -1;
    char chunk[256];
    std::size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, pipe)) > 0) output.append(chunk, n);
    int status = pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(KernelLaneHardware, HelperFromFileOptionRuns) {
    const char* helper = std::getenv("ET_KERNEL_LANE_SELFTEST_HELPER");
    ASSERT_NE(helper, nullptr) << "selftest.sh passes --file HELPER and --env ET_KERNEL_LANE_SELFTEST_HELPER";
    std::string out;
    EXPECT_EQ(run(std::string(helper) + " ping", out), 0);
    EXPECT_EQ(out, "pong\n");
}

TEST(KernelLaneHardware, SetprivDropsToNobodyWhoCannotOpenTheHeap) {
    const char* helper = std::getenv("ET_KERNEL_LANE_SELFTEST_HELPER");
    ASSERT_NE(helper, nullptr);
    std::string out;
    // The helper reports the uid it runs as and the errno of opening the heap.
    EXPECT_EQ(run(std::string("setpriv --reuid=65534 --regid=65534 --clear-groups ") + helper + " open /dev/dma_heap/system", out),
              0);
    EXPECT_EQ(out, "uid=65534 errno=" + std::to_string(EACCES) + "\n");
}

}  // namespace
