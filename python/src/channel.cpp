// SPDX-License-Identifier: Apache-2.0
// edgetensor.channel (edgetensor/channel.h): the frame channel. Sockets come in as socket.socket objects
// or int fds and are duplicated (the caller keeps and closes its own); sockets handed out are
// socket.socket objects. Waits with a timeout run in slices with the GIL released, and Python's signal
// handlers run between slices, so Ctrl-C ends them. The awaitable receives live in edgetensor/_channel.py.
#include "bindings.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace etpy {
namespace {

namespace ch = et::channel;
using std::chrono::milliseconds;

/// Longest a blocking call waits before it runs Python's signal handlers (Ctrl-C within this).
constexpr milliseconds kSlice{50};

et::UniqueFd duplicate_socket(const py::handle& sock, const char* who) {
  const int fd = to_fd(sock);
  if (fd < 0) raise_invalid(std::string(who) + ": fd " + std::to_string(fd) + " is not an open socket");
  auto dup = et::UniqueFd::duplicate(fd);
  if (!dup) raise(et::Error(dup.error().code(), std::string(who) + ": " + dup.error().message(), dup.error().sys_errno()));
  return std::move(*dup);
}

/// A socket.socket owning `fd` (the family and type are read from the fd).
py::object to_socket(et::UniqueFd fd) {
  py::object s = py::module_::import("socket").attr("socket")(py::arg("fileno") = fd.get());
  (void)fd.release();  // the socket object owns it now
  return s;
}

bool timed_out(const et::Error& e) { return e.code() == et::ErrorCode::Busy && e.sys_errno() == ETIMEDOUT; }

/// Runs fn(slice) -> Result<T> with the GIL released, in slices of at most kSlice, until it gives anything
/// but a timeout or `timeout` (nullopt: no bound) has passed; between slices Python's signal handlers run
/// (an exception they raise ends the call) and `closed` (when given) ends the wait. The library names the
/// timeout it was given: a sliced wait's final error names the caller's.
template <class Fn>
auto sliced(const std::optional<milliseconds>& timeout, Fn&& fn, const std::atomic<bool>* closed = nullptr) {
  using Clock = std::chrono::steady_clock;
  if (timeout && *timeout <= kSlice) return released([&] { return fn(*timeout); });
  const auto start = Clock::now();
  for (;;) {
    milliseconds slice = kSlice;
    if (timeout) {
      const auto left = *timeout - std::chrono::duration_cast<milliseconds>(Clock::now() - start);
      slice = std::clamp(left, milliseconds(1), kSlice);
    }
    std::optional<std::invoke_result_t<Fn&, milliseconds>> result;
    {
      py::gil_scoped_release unlocked;
      result.emplace(fn(slice));
    }
    if (*result || !timed_out(result->error())) return unwrap(std::move(*result));
    if (timeout && Clock::now() - start >= *timeout) {
      const et::Error& e = result->error();
      std::string text = e.message();
      const std::string said = " " + std::to_string(slice.count()) + " ms";
      if (const auto at = text.rfind(said); at != std::string::npos)
        text.replace(at, said.size(), " " + std::to_string(timeout->count()) + " ms");
      raise(et::Error(e.code(), text, e.sys_errno()));
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (closed != nullptr && closed->load())
      raise(et::Error(et::ErrorCode::FailedPrecondition, "edgetensor.channel: closed while waiting"));
  }
}

/// milliseconds::max() (the channel's "no limit") for None.
milliseconds or_forever(const std::optional<milliseconds>& t) { return t ? *t : milliseconds::max(); }

/// `e` (a slice's timeout) as the caller's: its text names `timeout` where it named the slice, and its errno is
/// ETIMEDOUT (Python: edgetensor.TimeoutError, as every wait that ran out).
et::Error caller_timeout(const et::Error& e, milliseconds timeout) {
  std::string text = e.message();
  auto swap = [&text](const std::string& from, const std::string& to) {
    if (const auto at = text.rfind(from); at != std::string::npos) text.replace(at, from.size(), to);
  };
  auto seconds = [](milliseconds t) {  // as the library writes them ("0.05", "1")
    std::string v = std::to_string(static_cast<double>(t.count()) / 1000.0);
    v.erase(v.find_last_not_of('0') + 1);
    if (v.back() == '.') v.pop_back();
    return v;
  };
  swap("SenderOptions::send_timeout, " + std::to_string(kSlice.count()) + " ms",
       "send_timeout, " + std::to_string(timeout.count()) + " ms");
  swap("after " + seconds(kSlice) + " s", "after " + seconds(timeout) + " s");
  return et::Error(e.code(), text, ETIMEDOUT);
}

/// A Sender or Receiver that close() (or the context manager) ends at once, also while another thread
/// waits in one of its calls: each call holds its own reference for its duration.
template <class T>
struct Handle {
  std::shared_ptr<T> object;
  std::string name;
  std::atomic<bool> closed{false};
  bool awaiting = false;  // an awaitable receive is registered (edgetensor/_channel.py)

  std::shared_ptr<T> get(const char* kind) const {
    if (!object)
      raise(et::Error(et::ErrorCode::FailedPrecondition,
                      std::string("edgetensor.channel.") + kind + (name.empty() ? "" : " '" + name + "'") + " is closed"));
    return object;
  }
  void close() {
    closed = true;
    std::shared_ptr<T> last = std::move(object);
    py::gil_scoped_release unlocked;  // a Sender's destructor joins its reader thread
    last.reset();  // a call still running in another thread holds its own reference
  }
};
/// A Sender and its caller's send_timeout. One longer than a slice (or none) runs in slices: the library's
/// Sender gets kSlice as its send_timeout, and send, send_frame and end_stream repeat while they time out
/// (send_in_slices), so Ctrl-C ends a send that waits for the receiver.
struct SenderHandle : Handle<ch::Sender> {
  std::optional<milliseconds> send_timeout;  // the caller's; nullopt: no bound
  bool in_slices = false;
};
using ListenerHandle = Handle<ch::Listener>;
/// A Publisher and the receiver options it was made with (add_receiver's overrides start from them).
struct PublisherHandle : Handle<ch::Publisher> {
  ch::SenderOptions receiver;
};
using ReceiverHandle = Handle<ch::Receiver>;

ch::SendOptions send_options(const py::object& sequence, const py::object& timestamp_ns, const py::object& pts_ns,
                             const py::object& duration_ns, const py::object& flags) {
  ch::SendOptions o;
  o.sequence = optional_int_arg<std::uint64_t>(sequence, "sequence");
  o.timestamp_ns = optional_int_arg<std::int64_t>(timestamp_ns, "timestamp_ns");
  o.pts_ns = optional_int_arg<std::int64_t>(pts_ns, "pts_ns");
  o.duration_ns = optional_int_arg<std::int64_t>(duration_ns, "duration_ns");
  o.flags = int_arg<std::uint32_t>(flags, "flags");
  return o;
}

ch::ReceiverPolicy to_policy(const py::handle& obj) {
  if (py::isinstance<ch::ReceiverPolicy>(obj)) return obj.cast<ch::ReceiverPolicy>();
  if (py::isinstance<py::str>(obj)) {
    const auto s = obj.cast<std::string>();
    if (s == "block") return ch::ReceiverPolicy::Block;
    if (s == "drop") return ch::ReceiverPolicy::Drop;
    raise_invalid("policy '" + s + "' is not 'block' or 'drop'");
  }
  throw py::type_error("policy must be a ReceiverPolicy or 'block' / 'drop', not " +
                       py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
}

ch::SenderOptions sender_options(std::string name, const py::handle& max_buffers, const py::object& send_timeout,
                                 const py::handle& policy, const py::handle& max_frames_out, bool receiver_may_choose) {
  ch::SenderOptions o;
  o.name = std::move(name);
  o.max_buffers = int_arg<std::size_t>(max_buffers, "max_buffers");
  o.send_timeout = or_forever(to_timeout_ms(send_timeout));
  o.policy = to_policy(policy);
  o.max_frames_out = int_arg<std::size_t>(max_frames_out, "max_frames_out");
  o.receiver_may_choose = receiver_may_choose;
  return o;
}

const char* kSenderOptionsDoc =
    "max_buffers: buffers announced at once (1..1024). send_timeout: seconds a send waits for the receiver "
    "(None: no bound). policy: 'block' (wait, then TimeoutError) or 'drop' (never wait: the frame is not sent "
    "to a receiver at its limit). max_frames_out: frames the receiver may hold before the policy applies (0: "
    "the buffer table's limit). receiver_may_choose: a receiver that asks for its own policy and limit "
    "(Receiver(policy=...)) gets them.";

const char* kSendArgsDoc =
    " sequence: greater than every one sent before (None: the previous + 1, 0 first). timestamp_ns: "
    "CLOCK_MONOTONIC ns (None: now). pts_ns, duration_ns (>= 0): carried unchanged, None: none. flags: carried "
    "unchanged. Returns the frame's sequence (also under policy 'drop' when the frame was dropped). The sender "
    "keeps the buffer until the receiver releases the frame. Waits at most send_timeout (policy 'block'; one "
    "longer than 50 ms in 50 ms slices, so up to one slice more) with the GIL released; Ctrl-C raises "
    "KeyboardInterrupt within a slice. Heap and PBO memory: UnsupportedError; a timeout: TimeoutError; the "
    "receiver gone: UnavailableError; the stream ended: FailedPreconditionError.";

/// Runs `fn`, a call of h's Sender that waits at most the library's send_timeout (send, send_frame,
/// end_stream), with the GIL released. In slices (SenderHandle): repeats it while it times out (Busy) until the
/// caller's send_timeout has passed, running Python's signal handlers between tries. A send that timed out
/// sent no frame and leaves the channel open (channel.h), so the next try is the same send.
template <class Fn>
auto send_in_slices(const SenderHandle& h, Fn&& fn) {
  if (!h.in_slices) return released(fn);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (;;) {
    std::optional<std::invoke_result_t<Fn&>> result;
    {
      py::gil_scoped_release unlocked;
      result.emplace(fn());
    }
    if (*result || result->error().code() != et::ErrorCode::Busy) return unwrap(std::move(*result));
    if (h.send_timeout && Clock::now() - start >= *h.send_timeout)
      raise(caller_timeout(result->error(), *h.send_timeout));
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (h.closed.load())
      raise(et::Error(et::ErrorCode::FailedPrecondition, "edgetensor.channel: closed while waiting"));
  }
}

void bind_stats(py::module_& m) {
  py::class_<ch::SenderStats>(m, "SenderStats", "A Sender's counters (channel.h SenderStats).")
      .def_readonly("frames_sent", &ch::SenderStats::frames_sent)
      .def_readonly("releases", &ch::SenderStats::releases, "Frame buffers released by the receiver.")
      .def_readonly("announces", &ch::SenderStats::announces, "Buffers announced (an fd sent each).")
      .def_readonly("retires", &ch::SenderStats::retires)
      .def_readonly("buffers_announced", &ch::SenderStats::buffers_announced)
      .def_readonly("frames_out", &ch::SenderStats::frames_out, "Frame buffers sent and not released.")
      .def_readonly("reannounces", &ch::SenderStats::reannounces)
      .def_readonly("frames_dropped", &ch::SenderStats::frames_dropped, "Frames not sent under policy 'drop'.")
      .def("__repr__", [](const ch::SenderStats& s) {
        return "SenderStats(frames_sent=" + std::to_string(s.frames_sent) + ", releases=" + std::to_string(s.releases) +
               ", frames_out=" + std::to_string(s.frames_out) + ", frames_dropped=" + std::to_string(s.frames_dropped) +
               ")";
      });
  py::class_<ch::ReceiverStats>(m, "ReceiverStats", "A Receiver's counters (channel.h ReceiverStats).")
      .def_readonly("frames_received", &ch::ReceiverStats::frames_received)
      .def_readonly("releases_sent", &ch::ReceiverStats::releases_sent)
      .def_readonly("announces", &ch::ReceiverStats::announces)
      .def_readonly("retires", &ch::ReceiverStats::retires)
      .def_readonly("buffers", &ch::ReceiverStats::buffers, "Imported now (one fd and one mapping each).")
      .def_readonly("frames_out", &ch::ReceiverStats::frames_out, "Delivered frame buffers still held.")
      .def_readonly("releases_queued", &ch::ReceiverStats::releases_queued)
      .def_readonly("frames_skipped", &ch::ReceiverStats::frames_skipped, "Released unseen by receive_latest().")
      .def_readonly("frames_missing", &ch::ReceiverStats::frames_missing, "Gaps in the sequences delivered.")
      .def_readonly("end_of_stream", &ch::ReceiverStats::end_of_stream)
      .def("__repr__", [](const ch::ReceiverStats& s) {
        return "ReceiverStats(frames_received=" + std::to_string(s.frames_received) +
               ", frames_out=" + std::to_string(s.frames_out) + ", frames_skipped=" + std::to_string(s.frames_skipped) +
               ", frames_missing=" + std::to_string(s.frames_missing) + ")";
      });
  py::class_<ch::PeerCredentials>(m, "PeerCredentials", "A peer's pid, uid and gid (SO_PEERCRED).")
      .def_readonly("pid", &ch::PeerCredentials::pid)
      .def_readonly("uid", &ch::PeerCredentials::uid)
      .def_readonly("gid", &ch::PeerCredentials::gid);
  py::class_<ch::ListenerStats>(m, "ListenerStats", "A Listener's counters.")
      .def_readonly("accepted", &ch::ListenerStats::accepted)
      .def_readonly("refused", &ch::ListenerStats::refused, "Peers the allow rule refused (told why, then closed unread).")
      .def_readonly("gone", &ch::ListenerStats::gone, "Peers that hung up before accept took them.")
      .def_readonly("last_refused", &ch::ListenerStats::last_refused, "PeerCredentials or None.");
}

void bind_delivery(py::module_& m) {
  py::class_<ch::Delivery>(
      m, "Delivery",
      "One frame as received: `tensor` (Sender.send) or `frame` (Sender.send_frame), or, with end_of_stream "
      "set, the end of the stream. The frame goes back to the sender when its last holder goes: this object, "
      "the tensor or frame, their views, maps and the numpy and torch arrays made from them.")
      .def_readonly("sequence", &ch::Delivery::sequence, "End of stream: the number of frames the sender sent.")
      .def_readonly("timestamp_ns", &ch::Delivery::timestamp_ns, "The sender's CLOCK_MONOTONIC, ns.")
      .def_readonly("pts_ns", &ch::Delivery::pts_ns, "Presentation time, ns (the producer's timeline), or None.")
      .def_readonly("duration_ns", &ch::Delivery::duration_ns, "ns, or None.")
      .def_readonly("flags", &ch::Delivery::flags)
      .def_readonly("end_of_stream", &ch::Delivery::end_of_stream, "The sender ended the stream (no frame).")
      .def_property_readonly(
          "tensor",
          [](const ch::Delivery& d) -> std::optional<et::TensorDyn> {
            if (d.tensor.is_empty_handle()) return std::nullopt;
            return d.tensor;
          },
          "The Tensor sent with Sender.send, or None.")
      .def_property_readonly(
          "frame",
          [](const ch::Delivery& d) -> std::optional<et::Frame> {
            if (d.frame.is_empty()) return std::nullopt;
            return d.frame;
          },
          "The Frame sent with Sender.send_frame, or None.")
      .def("__repr__", [](const ch::Delivery& d) {
        if (d.end_of_stream) return "<edgetensor.channel.Delivery end of stream after " + std::to_string(d.sequence) + " frames>";
        return "<edgetensor.channel.Delivery sequence " + std::to_string(d.sequence) +
               (d.frame.is_empty() ? ", tensor>" : ", frame>");
      });
}

void bind_listener(py::module_& m) {
  py::class_<ch::AllowRule>(m, "AllowRule", "Which peers a Listener accepts (SO_PEERCRED at accept); any match passes.")
      .def(py::init([](bool same_uid, std::vector<std::uint32_t> uids, std::vector<std::uint32_t> gids) {
             return ch::AllowRule{same_uid, std::move(uids), std::move(gids)};
           }),
           py::kw_only(), py::arg("same_uid") = true, py::arg("uids") = std::vector<std::uint32_t>{},
           py::arg("gids") = std::vector<std::uint32_t>{})
      .def_readonly("same_uid", &ch::AllowRule::same_uid)
      .def_readonly("uids", &ch::AllowRule::uids)
      .def_readonly("gids", &ch::AllowRule::gids);

  py::class_<ListenerHandle>(
      m, "Listener",
      "A named AF_UNIX SOCK_SEQPACKET socket that accepts channel peers (docs/CHANNEL.md, 'Named sockets'). A path "
      "starting with '@' is an abstract name. The socket file gets `mode` (owner only by default) and is removed "
      "by close() (or the end of a with block, or collection); a stale file of a dead listener is replaced.")
      .def(py::init([](const std::string& path, std::uint32_t mode, std::optional<ch::AllowRule> allow, int backlog) {
             ch::ListenOptions o;
             o.mode = mode;
             if (allow) o.allow = std::move(*allow);
             o.backlog = backlog;
             auto h = std::make_unique<ListenerHandle>();
             h->object = std::make_shared<ch::Listener>(unwrap(ch::Listener::create(path, o)));
             h->name = path;
             return h;
           }),
           py::arg("path"), py::kw_only(), py::arg("mode") = 0600, py::arg("allow") = py::none(),
           py::arg("backlog") = 16,
           "Binds and listens. allow: an AllowRule (default: peers of this process's uid). AlreadyExistsError "
           "when a live listener has the path or it is not a socket; InvalidArgumentError for a bad path, mode "
           "or backlog.")
      .def(
          "accept",
          [](ListenerHandle& h, const py::object& timeout) {
            auto l = h.get("Listener");
            return to_socket(sliced(to_timeout_ms(timeout), [&](milliseconds t) { return l->accept(t); }, &h.closed));
          },
          py::arg("timeout") = py::none(),
          "The next allowed peer's connected socket (a socket.socket: hand it to Sender or Receiver, then close "
          "it), waiting at most `timeout` seconds (None: no bound; 0: only one already waiting). Refused peers are "
          "closed and counted in stats(). TimeoutError, BusyError for 0. Ctrl-C ends the wait.")
      .def("fileno", [](const ListenerHandle& h) { return h.object ? h.object->fd() : -1; },
           "The listening socket (borrowed; -1 once closed): readable when a peer waits (then accept(0)).")
      .def_property_readonly("path", [](const ListenerHandle& h) { return h.name; })
      .def("stats", [](const ListenerHandle& h) { return h.object ? h.object->stats() : ch::ListenerStats{}; })
      .def_property_readonly("closed", [](const ListenerHandle& h) { return !h.object; })
      .def("close", &ListenerHandle::close, "Closes the socket and removes its file.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](ListenerHandle& h, const py::args&) { h.close(); })
      .def("__repr__", [](const ListenerHandle& h) {
        return "<edgetensor.channel.Listener '" + h.name + "'" + (h.object ? "" : " closed") + ">";
      });

  m.def(
      "connect",
      [](const std::string& path, const py::object& timeout) {
        // In slices, as accept: a connect that timed out made no connection, so the next try is the same call.
        return to_socket(sliced(to_timeout_ms(timeout), [&](milliseconds t) { return ch::connect(path, t); }));
      },
      py::arg("path"), py::arg("timeout") = 1.0,
      "Connects to a Listener's path ('@' first: an abstract name); returns the connected socket.socket. Waits at "
      "most `timeout` seconds while the listener's queue is full (None: no bound; in 50 ms slices with the GIL "
      "released, Ctrl-C raises KeyboardInterrupt within a slice), then TimeoutError (BusyError "
      "for 0). FileNotFoundError (no such file), UnavailableError (nobody listens), PermissionError (the file's "
      "mode).");
  m.def(
      "socket_pair",
      [] {
        auto pair = unwrap(ch::socket_pair());
        py::object a = to_socket(std::move(pair.first));
        return py::make_tuple(a, to_socket(std::move(pair.second)));
      },
      "A connected AF_UNIX SOCK_SEQPACKET pair of socket.socket objects (CLOEXEC): one for a Sender, one for a "
      "Receiver (pass one to a child with subprocess's pass_fds or os.fork, then close it here).");
}

void bind_sender(py::module_& m) {
  py::class_<SenderHandle>(
      m, "Sender",
      "The sending end of a frame channel. sock: a connected SOCK_SEQPACKET socket.socket or int fd, duplicated "
      "(close your own whenever you like). Each buffer's fd crosses once; then a frame is a small message, and "
      "the sender holds the buffer until the receiver releases it (a Pool has it back then). close() (or the end "
      "of a with block, or collection) shuts the channel: the receiver sees it end. Threads: any.")
      .def(py::init([](const py::handle& sock, std::string name, const py::handle& max_buffers,
                       const py::object& send_timeout, const py::handle& policy, const py::handle& max_frames_out,
                       bool receiver_may_choose) {
             auto o = sender_options(name, max_buffers, send_timeout, policy, max_frames_out, receiver_may_choose);
             auto fd = duplicate_socket(sock, "edgetensor.channel.Sender");
             auto h = std::make_unique<SenderHandle>();
             h->send_timeout = to_timeout_ms(send_timeout);
             if (!h->send_timeout || *h->send_timeout > kSlice) {
               o.send_timeout = kSlice;
               h->in_slices = true;
             }
             h->object = std::make_shared<ch::Sender>(unwrap(ch::Sender::create(std::move(fd), o)));
             h->name = std::move(name);
             return h;
           }),
           py::arg("sock"), py::kw_only(), py::arg("name") = "", py::arg("max_buffers") = 32,
           py::arg("send_timeout") = 1.0, py::arg("policy") = "block", py::arg("max_frames_out") = 0,
           py::arg("receiver_may_choose") = true,
           (std::string("name: in errors. ") + kSenderOptionsDoc +
            " Errors: InvalidArgumentError (not a SOCK_SEQPACKET socket, a closed fd, an option out of range).")
               .c_str())
      .def(
          "send",
          [](SenderHandle& h, const et::TensorDyn& tensor, const py::object& sequence,
             const py::object& timestamp_ns, const py::object& pts_ns, const py::object& duration_ns,
             const py::object& flags) {
            auto s = h.get("Sender");
            const auto o = send_options(sequence, timestamp_ns, pts_ns, duration_ns, flags);
            return send_in_slices(h, [&] { return s->send(tensor, o); });
          },
          py::arg("tensor"), py::kw_only(), py::arg("sequence") = py::none(), py::arg("timestamp_ns") = py::none(),
          py::arg("pts_ns") = py::none(), py::arg("duration_ns") = py::none(), py::arg("flags") = 0,
          (std::string("Sends `tensor` (sealed memfd or DMA-BUF memory: a Pool's or allocate(memory='shm')'s) as "
                       "one frame.") + kSendArgsDoc).c_str())
      .def(
          "send_frame",
          [](SenderHandle& h, const et::Frame& frame, const py::object& sequence,
             const py::object& timestamp_ns, const py::object& pts_ns, const py::object& duration_ns,
             const py::object& flags) {
            auto s = h.get("Sender");
            const auto o = send_options(sequence, timestamp_ns, pts_ns, duration_ns, flags);
            return send_in_slices(h, [&] { return s->send_frame(frame, o); });
          },
          py::arg("frame"), py::kw_only(), py::arg("sequence") = py::none(), py::arg("timestamp_ns") = py::none(),
          py::arg("pts_ns") = py::none(), py::arg("duration_ns") = py::none(), py::arg("flags") = 0,
          (std::string("Sends a Frame (1 to 4 buffers) as one frame.") + kSendArgsDoc).c_str())
      .def(
          "acquire",
          [](SenderHandle& h, et::Pool& pool, const py::object& timeout) {
            auto s = h.get("Sender");
            const auto t = or_forever(to_timeout_ms(timeout));
            return released([&] { return s->acquire(pool, t); });
          },
          py::arg("pool"), py::arg("timeout") = py::none(),
          "pool.acquire(timeout), and the buffer table grows to the pool's size (each buffer announced once). "
          "On a timeout the error also names the frames the receiver holds. Ctrl-C ends the wait.")
      .def(
          "drain",
          [](SenderHandle& h, const py::object& timeout) {
            auto s = h.get("Sender");
            sliced(to_timeout_ms(timeout), [&](milliseconds t) { return s->drain(t); }, &h.closed);
          },
          py::arg("timeout") = py::none(),
          "Waits until the receiver has released every frame sent (a Pool has them back), at most `timeout` "
          "seconds (None: no bound). TimeoutError naming the frames out; the channel's error when it closed "
          "with frames out. Call end_stream() first: a consumer holding frames until its next one then lets go.")
      .def(
          "end_stream",
          [](SenderHandle& h) {
            auto s = h.get("Sender");
            send_in_slices(h, [&] { return s->end_stream(); });
          },
          "Ends the stream: after the frames sent before it, the receiver gets a Delivery with end_of_stream "
          "set. Later sends raise FailedPreconditionError; calling it again does nothing.")
      .def("stats", [](const SenderHandle& h) { return h.object ? h.object->stats() : ch::SenderStats{}; },
           "The counters now (a SenderStats; zeros once closed).")
      .def(
          "status", [](const SenderHandle& h) { unwrap(h.get("Sender")->status()); },
          "None while the channel is open; else raises the error it closed with (UnavailableError: the receiver "
          "went).")
      .def_property_readonly("name", [](const SenderHandle& h) { return h.name; })
      .def_property_readonly("closed", [](const SenderHandle& h) { return !h.object; })
      .def("close", &SenderHandle::close, "Shuts the channel (the receiver sees it end) and drops every frame held.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](SenderHandle& h, const py::args&) { h.close(); })
      .def("__repr__", [](const SenderHandle& h) {
        return "<edgetensor.channel.Sender '" + h.name + "'" + (h.object ? "" : " closed") + ">";
      });
}

void bind_receiver(py::module_& m) {
  py::class_<ReceiverHandle>(
      m, "Receiver",
      "The receiving end of a frame channel. sock: a connected SOCK_SEQPACKET socket.socket or int fd, "
      "duplicated (close your own whenever you like). Each buffer is imported and mapped once; a frame you drop "
      "(its last holder: the Delivery, tensor, frame, views, maps, numpy and torch arrays) goes back to the "
      "sender. Await receive_async() in asyncio (loop.add_reader on fileno(); no thread). close() (or the end "
      "of a with block) closes the channel; frames already received stay valid. Threads: any.")
      .def(py::init([](const py::handle& sock, std::string name, const py::handle& max_buffers,
                       const py::object& max_buffer_bytes, const py::handle& max_queued_releases,
                       const py::object& policy, const py::handle& max_frames_out) {
             ch::ReceiverOptions o;
             o.name = name;
             o.max_buffers = int_arg<std::size_t>(max_buffers, "max_buffers");
             if (auto bytes = optional_int_arg<std::size_t>(max_buffer_bytes, "max_buffer_bytes"))
               o.limits.max_buffer_bytes = *bytes;
             o.max_queued_releases = int_arg<std::size_t>(max_queued_releases, "max_queued_releases");
             if (!policy.is_none()) o.policy = to_policy(policy);
             o.max_frames_out = int_arg<std::size_t>(max_frames_out, "max_frames_out");
             auto fd = duplicate_socket(sock, "edgetensor.channel.Receiver");
             auto h = std::make_unique<ReceiverHandle>();
             h->object = std::make_shared<ch::Receiver>(unwrap(ch::Receiver::create(std::move(fd), o)));
             h->name = std::move(name);
             return h;
           }),
           py::arg("sock"), py::kw_only(), py::arg("name") = "", py::arg("max_buffers") = 32,
           py::arg("max_buffer_bytes") = py::none(), py::arg("max_queued_releases") = 4096,
           py::arg("policy") = py::none(), py::arg("max_frames_out") = 0,
           "name: in errors. max_buffers: buffers imported at once (1..1024). max_buffer_bytes: the largest buffer "
           "accepted (default 64 GiB). max_queued_releases: releases queued while the sender does not read them. "
           "policy, max_frames_out: ask the sender to serve this receiver so ('drop' for a latest-frame consumer "
           "of a live stream); None: the sender's choice. Errors: InvalidArgumentError (not a SOCK_SEQPACKET "
           "socket, a closed fd, an option out of range).")
      .def(
          "receive",
          [](ReceiverHandle& h, const py::object& timeout) {
            auto r = h.get("Receiver");
            return sliced(to_timeout_ms(timeout), [&](milliseconds t) { return r->receive(t); }, &h.closed);
          },
          py::arg("timeout") = py::none(),
          "The next frame (a Delivery), waiting at most `timeout` seconds (None: no bound; 0: only what has "
          "arrived). After the sender's end_stream(): a Delivery with end_of_stream set, on every call. Sends "
          "queued releases first. TimeoutError (BusyError for 0): the channel stays open. UnavailableError: the "
          "sender closed or died. PermissionDeniedError (not allowed to connect) or OutOfRangeError (the "
          "publisher's max_receivers): the producer refused this receiver, with its reason. Waits with the GIL "
          "released; Ctrl-C raises KeyboardInterrupt.")
      .def(
          "receive_latest",
          [](ReceiverHandle& h, const py::object& timeout) {
            auto r = h.get("Receiver");
            return sliced(to_timeout_ms(timeout), [&](milliseconds t) { return r->receive_latest(t); }, &h.closed);
          },
          py::arg("timeout") = py::none(),
          "The newest frame: waits as receive(), then takes every frame that has arrived and returns the last, "
          "releasing the older ones at once (stats().frames_skipped).")
      .def(
          "flush", [](ReceiverHandle& h) { unwrap(h.get("Receiver")->flush()); },
          "Sends the releases queued because the socket was full, without waiting.")
      .def("fileno", [](const ReceiverHandle& h) { return h.object ? h.object->fd() : -1; },
           "The channel's socket (borrowed; -1 once closed) for select or an event loop: readable when a message "
           "arrived (then receive(0) may still find no frame: BusyError). Read it only through this Receiver.")
      .def("stats", [](const ReceiverHandle& h) { return h.object ? h.object->stats() : ch::ReceiverStats{}; },
           "The counters now (a ReceiverStats; zeros once closed).")
      .def(
          "status", [](const ReceiverHandle& h) { unwrap(h.get("Receiver")->status()); },
          "None while the channel is open; else raises the error it closed with.")
      .def_property_readonly("name", [](const ReceiverHandle& h) { return h.name; })
      .def_property_readonly("closed", [](const ReceiverHandle& h) { return !h.object; })
      .def_readwrite("_awaiting", &ReceiverHandle::awaiting)
      .def("close", &ReceiverHandle::close, "Closes the channel and every import; received frames stay valid.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](ReceiverHandle& h, const py::args&) { h.close(); })
      .def("__repr__", [](const ReceiverHandle& h) {
        return "<edgetensor.channel.Receiver '" + h.name + "'" + (h.object ? "" : " closed") + ">";
      });
}

void bind_publisher(py::module_& m) {
  py::class_<ch::PublishResult>(m, "PublishResult", "What one Publisher.send did.")
      .def_readonly("sequence", &ch::PublishResult::sequence, "The frame's sequence, the same on every receiver.")
      .def_readonly("delivered", &ch::PublishResult::delivered, "Receivers the frame was sent to.")
      .def_readonly("dropped", &ch::PublishResult::dropped, "Receivers that did not get it (their policy, a timeout).")
      .def_readonly("removed", &ch::PublishResult::removed, "Receivers found gone and removed by this send.")
      .def("__repr__", [](const ch::PublishResult& r) {
        return "PublishResult(sequence=" + std::to_string(r.sequence) + ", delivered=" + std::to_string(r.delivered) +
               ", dropped=" + std::to_string(r.dropped) + ", removed=" + std::to_string(r.removed) + ")";
      });
  py::class_<ch::ReceiverInfo>(m, "ReceiverInfo", "One receiver of a Publisher.")
      .def_readonly("id", &ch::ReceiverInfo::id, "From add_receiver or accept, 1 first; never reused.")
      .def_readonly("peer", &ch::ReceiverInfo::peer, "PeerCredentials, or None.")
      .def_readonly("policy", &ch::ReceiverInfo::policy, "In force now (the receiver's request, if granted).")
      .def_readonly("max_frames_out", &ch::ReceiverInfo::max_frames_out)
      .def_readonly("stats", &ch::ReceiverInfo::stats, "Its SenderStats (frames_dropped: its drops).");
  py::class_<ch::PublisherStats>(m, "PublisherStats", "A Publisher's counters.")
      .def_readonly("frames_published", &ch::PublisherStats::frames_published)
      .def_readonly("deliveries", &ch::PublisherStats::deliveries, "Frames sent, summed over receivers.")
      .def_readonly("drops", &ch::PublisherStats::drops, "Frames a receiver did not get, summed over receivers.")
      .def_readonly("receivers_joined", &ch::PublisherStats::receivers_joined)
      .def_readonly("receivers_left", &ch::PublisherStats::receivers_left)
      .def_readonly("receivers_refused", &ch::PublisherStats::receivers_refused)
      .def_readonly("receivers", &ch::PublisherStats::receivers, "Served now.");

  py::class_<PublisherHandle>(
      m, "Publisher",
      "One producer serving many receivers (docs/CHANNEL.md, 'Many receivers'): each receiver has its own "
      "socket, policy, frame limit and counters; a buffer goes back to its Pool when every receiver it went to "
      "has released it. With a path it listens there and accepts receivers on its own thread. close() (or the "
      "end of a with block) closes every receiver. Threads: any.")
      .def(py::init([](const std::optional<std::string>& path, std::string name, const py::handle& max_receivers,
                       const py::handle& max_buffers, const py::object& send_timeout, const py::handle& policy,
                       const py::handle& max_frames_out, bool receiver_may_choose, std::uint32_t mode,
                       std::optional<ch::AllowRule> allow, int backlog) {
             ch::PublisherOptions o;
             o.name = name;
             o.max_receivers = int_arg<std::size_t>(max_receivers, "max_receivers");
             o.receiver = sender_options(name, max_buffers, send_timeout, policy, max_frames_out, receiver_may_choose);
             auto h = std::make_unique<PublisherHandle>();
             if (path) {
               ch::ListenOptions l;
               l.mode = mode;
               if (allow) l.allow = std::move(*allow);
               l.backlog = backlog;
               h->object = std::make_shared<ch::Publisher>(unwrap(ch::Publisher::listen(*path, l, o)));
             } else {
               h->object = std::make_shared<ch::Publisher>(unwrap(ch::Publisher::create(o)));
             }
             h->receiver = o.receiver;
             h->name = std::move(name);
             return h;
           }),
           py::arg("path") = py::none(), py::kw_only(), py::arg("name") = "", py::arg("max_receivers") = 64,
           py::arg("max_buffers") = 32, py::arg("send_timeout") = 1.0, py::arg("policy") = "block",
           py::arg("max_frames_out") = 0, py::arg("receiver_may_choose") = true, py::arg("mode") = 0600,
           py::arg("allow") = py::none(), py::arg("backlog") = 16,
           (std::string("path: listen there (as Listener: mode, allow, backlog) and accept receivers while the "
                        "publisher lives; None: add them with add_receiver. max_receivers: served at once. The "
                        "options of every receiver: ") + kSenderOptionsDoc)
               .c_str())
      .def(
          "add_receiver",
          [](PublisherHandle& h, const py::handle& sock, const py::object& policy, const py::object& frames_out) {
            const auto max_frames_out = optional_int_arg<std::size_t>(frames_out, "max_frames_out");
            auto p = h.get("Publisher");
            auto fd = duplicate_socket(sock, "edgetensor.channel.Publisher.add_receiver");
            if (policy.is_none() && !max_frames_out) return unwrap(p->add_receiver(std::move(fd)));
            return unwrap(p->add_receiver(std::move(fd), [&] {
              ch::SenderOptions o = h.receiver;
              if (!policy.is_none()) o.policy = to_policy(policy);
              if (max_frames_out) o.max_frames_out = *max_frames_out;
              return o;
            }()));
          },
          py::arg("sock"), py::kw_only(), py::arg("policy") = py::none(), py::arg("max_frames_out") = py::none(),
          "Serves a receiver on `sock` (duplicated), with the publisher's receiver options or this policy and "
          "frame limit; returns its id. OutOfRangeError past max_receivers.")
      .def(
          "send",
          [](PublisherHandle& h, const et::TensorDyn& tensor, const py::object& sequence,
             const py::object& timestamp_ns, const py::object& pts_ns, const py::object& duration_ns,
             const py::object& flags) {
            auto p = h.get("Publisher");
            const auto o = send_options(sequence, timestamp_ns, pts_ns, duration_ns, flags);
            return released([&] {
              ch::ScopedWaitCheck check(run_signal_handlers);  // Ctrl-C ends a wait for a receiver
              return p->send(tensor, o);
            });
          },
          py::arg("tensor"), py::kw_only(), py::arg("sequence") = py::none(), py::arg("timestamp_ns") = py::none(),
          py::arg("pts_ns") = py::none(), py::arg("duration_ns") = py::none(), py::arg("flags") = 0,
          "Sends `tensor` to every receiver (Sender.send's arguments); returns a PublishResult. A receiver's "
          "timeout or drop is that receiver's (PublishResult.dropped), not an error; no receiver is not an error. "
          "Ctrl-C ends a wait for a receiver within 50 ms (KeyboardInterrupt): the receivers served before it "
          "have the frame, the rest do not, and every channel stays open.")
      .def(
          "send_frame",
          [](PublisherHandle& h, const et::Frame& frame, const py::object& sequence,
             const py::object& timestamp_ns, const py::object& pts_ns, const py::object& duration_ns,
             const py::object& flags) {
            auto p = h.get("Publisher");
            const auto o = send_options(sequence, timestamp_ns, pts_ns, duration_ns, flags);
            return released([&] {
              ch::ScopedWaitCheck check(run_signal_handlers);
              return p->send_frame(frame, o);
            });
          },
          py::arg("frame"), py::kw_only(), py::arg("sequence") = py::none(), py::arg("timestamp_ns") = py::none(),
          py::arg("pts_ns") = py::none(), py::arg("duration_ns") = py::none(), py::arg("flags") = 0,
          "Sends a Frame to every receiver, as send().")
      .def(
          "acquire",
          [](PublisherHandle& h, et::Pool& pool, const py::object& timeout) {
            auto p = h.get("Publisher");
            const auto t = or_forever(to_timeout_ms(timeout));
            return released([&] { return p->acquire(pool, t); });
          },
          py::arg("pool"), py::arg("timeout") = py::none(),
          "pool.acquire(timeout), every receiver's buffer table sized to the pool; a timeout names the receivers "
          "holding frames. Ctrl-C ends the wait.")
      .def(
          "end_stream",
          [](PublisherHandle& h) {
            auto p = h.get("Publisher");
            released([&] {
              ch::ScopedWaitCheck check(run_signal_handlers);
              return p->end_stream();
            });
          },
          "Ends the stream on every receiver and every later joiner; later sends raise FailedPreconditionError. "
          "Ctrl-C ends a wait for a full socket (KeyboardInterrupt); call it again to reach the rest.")
      .def(
          "drain",
          [](PublisherHandle& h, const py::object& timeout) {
            auto p = h.get("Publisher");
            sliced(to_timeout_ms(timeout), [&](milliseconds t) { return p->drain(t); }, &h.closed);
          },
          py::arg("timeout") = py::none(),
          "Waits until every receiver has released every frame, at most `timeout` seconds (None: no bound); a "
          "receiver that leaves counts as drained. TimeoutError naming who holds frames.")
      .def(
          "disconnect",
          [](PublisherHandle& h, const py::handle& id) {
            unwrap(h.get("Publisher")->disconnect(int_arg<std::uint64_t>(id, "id")));
          },
          py::arg("id"),
          "Closes receiver `id`; its frames count as released (the pool may reuse them: what it still holds may be "
          "overwritten). NotFoundError for an unknown id.")
      .def("receivers", [](const PublisherHandle& h) { return h.get("Publisher")->receivers(); },
           "The receivers served now (ReceiverInfo), in the order they joined.")
      .def("stats", [](const PublisherHandle& h) { return h.object ? h.object->stats() : ch::PublisherStats{}; })
      .def_property_readonly("path", [](const PublisherHandle& h) { return h.object ? h.object->path() : std::string(); })
      .def_property_readonly("name", [](const PublisherHandle& h) { return h.name; })
      .def_property_readonly("closed", [](const PublisherHandle& h) { return !h.object; })
      .def("close", &PublisherHandle::close, "Stops accepting and closes every receiver.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PublisherHandle& h, const py::args&) { h.close(); })
      .def("__repr__", [](const PublisherHandle& h) {
        return "<edgetensor.channel.Publisher '" + h.name + "'" +
               (h.object ? ", " + std::to_string(h.object->stats().receivers) + " receiver(s)>" : " closed>");
      });
}

}  // namespace

void bind_channel(py::module_& channel) {
  channel.doc() =
      "The frame channel (edgetensor/channel.h, docs/CHANNEL.md): a stream of tensors or Frames between "
      "processes over a SOCK_SEQPACKET socket. Each buffer's fd crosses once; then a frame is a small message, "
      "and the receiver's drop of a frame releases it back to the sender (a Pool has the buffer back then).";
  py::enum_<ch::ReceiverPolicy>(channel, "ReceiverPolicy", "What a send does when the receiver is at its limit.")
      .value("BLOCK", ch::ReceiverPolicy::Block)
      .value("DROP", ch::ReceiverPolicy::Drop);
  bind_stats(channel);
  bind_delivery(channel);
  bind_listener(channel);
  bind_sender(channel);
  bind_receiver(channel);
  bind_publisher(channel);
}

}  // namespace etpy
