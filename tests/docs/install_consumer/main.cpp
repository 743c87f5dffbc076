// Uses the installed headers and library: an NV12 image in shared memory, its plane views, an NCHW view.
#include <edgetensor/edgetensor.h>

#include <cstdio>
#include <string>

int main() {
  using namespace edgetensor;
  ImageAlignment align;
  align.row_bytes = 64;
  AllocateOptions options;
  options.memory = MemoryKind::Shm;
  auto image = TensorDyn::allocate_image(64, 48, PixelFormat::Nv12, align, options);
  if (!image) {
    std::fprintf(stderr, "allocate_image: %s\n", image.error().message().c_str());
    return 1;
  }
  auto uv = image->plane(1);
  if (!uv || uv->rank() != 3 || uv->shape()[0] != 24 || uv->shape()[1] != 32 || uv->shape()[2] != 2) {
    std::fprintf(stderr, "plane(1) is not [24, 32, 2]\n");
    return 1;
  }
  auto n = uv->unsqueeze(0);
  if (!n || n->rank() != 4) return 1;
  std::printf("edgetensor %s: nv12 64x48 in %s, uv plane [24, 32, 2]\n", std::string(version()).c_str(),
              memory_kind_name(image->memory()).data());
  return 0;
}
