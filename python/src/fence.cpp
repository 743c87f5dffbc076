// SPDX-License-Identifier: Apache-2.0
// edgetensor.Fence (edgetensor/fence.h, sync::Fence): a kernel sync_file, or already signalled; and
// Tensor.export_fence / import_fence on DMA-BUFs. Waits take seconds, as Python's do, and release the GIL.
#include "bindings.h"

#include <pybind11/stl.h>

namespace etpy {
namespace {

namespace sync = et::sync;

sync::Access to_access(const py::handle& obj) {
  if (py::isinstance<sync::Access>(obj)) return obj.cast<sync::Access>();
  if (py::isinstance<py::str>(obj)) {
    const auto text = obj.cast<std::string>();
    if (text == "read") return sync::Access::Read;
    if (text == "write") return sync::Access::Write;
    raise_invalid("unknown fence access '" + text + "' (known: read, write)");
  }
  throw py::type_error("access must be an edgetensor.FenceAccess or 'read' / 'write', not " +
                       py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
}

}  // namespace

void bind_fence(py::module_& m, py::class_<et::TensorDyn>& tensor) {
  py::enum_<sync::Access>(m, "FenceAccess",
                          "Which access a DMA-BUF fence covers (DMA_BUF_SYNC_READ / _WRITE). Export READ: the "
                          "writers' fences (what a reader waits for); WRITE: every fence (what a writer waits for). "
                          "Import READ: a reader's fence (later writers wait); WRITE: a writer's fence (every later "
                          "access waits). Calls also take 'read' and 'write'.")
      .value("READ", sync::Access::Read)
      .value("WRITE", sync::Access::Write);

  py::class_<sync::FenceInfo>(m, "FenceInfo", "One dma-fence inside a sync_file (struct sync_fence_info).")
      .def_readonly("driver", &sync::FenceInfo::driver, "The driver that signals it ('vgem', a GPU's).")
      .def_readonly("timeline", &sync::FenceInfo::timeline, "Its timeline's name.")
      .def_readonly("status", &sync::FenceInfo::status, "1 signalled, 0 pending, negative: signalled with that -errno.")
      .def_readonly("timestamp_ns", &sync::FenceInfo::timestamp_ns,
                    "CLOCK_MONOTONIC time it signalled, in nanoseconds; 0 while pending.")
      .def("__repr__", [](const sync::FenceInfo& f) {
        return "<edgetensor.FenceInfo " + f.driver + "/" + f.timeline + " status=" + std::to_string(f.status) + ">";
      });

  py::class_<sync::FenceStatus>(m, "FenceStatus", "What SYNC_IOC_FILE_INFO says of a sync_file (Fence.status()).")
      .def_readonly("name", &sync::FenceStatus::name,
                    "The sync_file's name (a merge's, else the kernel's); '' for a fence without an fd.")
      .def_readonly("status", &sync::FenceStatus::status,
                    "1 signalled, 0 pending, negative: an error (-errno) of one of its fences.")
      .def_readonly("fences", &sync::FenceStatus::fences, "Its dma-fences (a list of FenceInfo); empty without an fd.")
      .def("__str__", &sync::FenceStatus::to_string)
      .def("__repr__", [](const sync::FenceStatus& s) { return "<edgetensor.FenceStatus " + s.to_string() + ">"; });

  py::class_<sync::Fence>(m, "Fence",
                          "A sync_file fd that a driver signals when device work is done, or already signalled "
                          "(no fd). Owns its fd: it is closed when the Fence is collected (release() gives it "
                          "away). The library makes no sync_file of its own: fences come from a DMA-BUF "
                          "(Tensor.export_fence) or another driver's fd (Fence.adopt / Fence.duplicate). "
                          "Threads: distinct fences from any threads; the calls of one fence may run at once. "
                          "docs/SYNC.md has the rules.")
      .def(py::init<>(), "An already signalled fence (no fd).")
      .def_static(
          "adopt", [](int fd) { return unwrap(sync::Fence::adopt(et::UniqueFd(fd))); }, py::arg("fd"),
          "Takes ownership of the int `fd`, which must be a sync_file (checked with SYNC_IOC_FILE_INFO): on "
          "every error it is closed too. InvalidArgumentError for a negative fd or one that is no sync_file "
          "(naming what it is).")
      .def_static(
          "duplicate", [](const py::handle& fd) { return unwrap(sync::Fence::duplicate(to_fd(fd))); }, py::arg("fd"),
          "As adopt, of a CLOEXEC duplicate of the borrowed `fd` (an int or an object with fileno(); the caller "
          "keeps and closes its own); -1 gives a signalled fence (the wire convention). Errors: as adopt, "
          "BusyError when fds run out.")
      .def_static(
          "merge",
          [](const sync::Fence& a, const sync::Fence& b, const std::string& name) {
            return unwrap(sync::Fence::merge(a, b, name));
          },
          py::arg("a"), py::arg("b"), py::arg("name") = "edgetensor",
          "A new fence that signals once both have (SYNC_IOC_MERGE); when one is signalled without an fd, a dup "
          "of the other. name: at most 31 bytes are kept. InvalidArgumentError for a NUL in name; BusyError "
          "when fds run out.")
      .def_property_readonly("is_signalled_without_fd", &sync::Fence::is_signalled_without_fd,
                             "True when the fence has no fd (known signalled without asking the kernel).")
      .def("fileno", &sync::Fence::fd,
           "The sync_file fd, still the fence's (do not close it), for select/poll or asyncio's add_reader "
           "(readable once signalled); -1 for a fence without an fd (signalled: nothing to wait for).")
      .def(
          "wait",
          [](const sync::Fence& f, const py::object& timeout) {
            const auto ms = to_timeout_ms(timeout);
            const auto t = ms ? *ms : std::chrono::milliseconds(-1);  // None: no bound (fence.h's negative)
            released([&] { return f.wait(t); }, !f.is_signalled_without_fd());
          },
          py::arg("timeout") = py::none(),
          "Waits until the fence signals, at most `timeout` seconds (0 only checks; None: no bound), with the "
          "GIL released; a signal does not end the wait early (use a bounded timeout, or asyncio with "
          "fileno()). A fence signalled with an error counts as signalled (status() tells). TimeoutError when "
          "the timeout passes (BusyError for 0), naming the fd, the timeout and the pending fences.")
      .def(
          "is_signalled", [](const sync::Fence& f) { return unwrap(f.is_signalled()); },
          "True when the fence has signalled (poll with timeout 0; never waits).")
      .def(
          "status", [](const sync::Fence& f) { return unwrap(f.status()); },
          "The sync_file's name and each dma-fence with driver and timeline names (a FenceStatus); status 1 and "
          "no fences without an fd.")
      .def(
          "dup", [](const sync::Fence& f) { return unwrap(f.dup()); },
          "A second Fence on the same sync_file (a new CLOEXEC fd); a signalled one for a signalled one. "
          "BusyError when fds run out.")
      .def(
          "release", [](sync::Fence& f) { return f.release().release(); },
          "Gives up the fd (-1 when there is none): the caller owns it and closes it (os.close), e.g. for an "
          "API that takes a sync_file; this Fence becomes signalled without an fd.")
      .def("__repr__", [](const sync::Fence& f) {
        return f.is_signalled_without_fd() ? std::string("<edgetensor.Fence signalled>")
                                           : "<edgetensor.Fence fd=" + std::to_string(f.fd()) + ">";
      });

  tensor
      .def(
          "export_fence",
          [](const et::TensorDyn& t, const py::handle& access) {
            const auto a = to_access(access);
            return unwrap(sync::export_fence(t, a));
          },
          py::arg("access"),
          "The fences of this tensor's DMA-BUF (the whole buffer) as a new Fence (DMA_BUF_IOCTL_EXPORT_SYNC_FILE, "
          "Linux >= 6.0): a snapshot. access 'read': its writers; 'write': every user. A buffer without fences "
          "gives a signalled sync_file. UnsupportedError for memory that is no DMA-BUF (naming its kind) or a "
          "kernel without the ioctl; FailedPreconditionError for an empty handle.")
      .def(
          "import_fence",
          [](const et::TensorDyn& t, const sync::Fence& fence, const py::handle& access) {
            const auto a = to_access(access);
            unwrap(sync::import_fence(t, fence, a));
          },
          py::arg("fence"), py::arg("access"),
          "Adds `fence` (borrowed; it keeps its fd) to this tensor's DMA-BUF as a reader's ('read') or a "
          "writer's ('write') fence (DMA_BUF_IOCTL_IMPORT_SYNC_FILE): maps and drivers wait for it from now on. "
          "Errors: as export_fence. Export, device work and import are three calls: serialise the buffer's "
          "users across them (docs/SYNC.md, \"Rules\").");
}

}  // namespace etpy
