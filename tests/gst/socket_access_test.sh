#!/bin/sh
# Who may connect to edgetensorsink's socket: socket-mode sets the file's permission bits, allow-uids and
# allow-gids add peers beside the sink's own uid (SO_PEERCRED at accept). A consumer of another uid (65534,
# through setpriv) receives the stream with socket-mode=0666 allow-uids=65534; it is refused with 0660 (the
# file mode: EACCES at connect) and with 0666 alone (the allow rule: told why, and not connecting again with
# reconnect=true); a malformed id list fails the sink,
# naming the property and the entry. Needs root (to run a consumer under another uid). gst-launch-1.0 reads
# a leading 0 as octal.
set -u
. "$(dirname "$0")/common.sh"
need_element videotestsrc gstreamer1.0-plugins-base
need_element fakesink "GStreamer core elements"
[ "$(id -u)" = 0 ] || { echo "SKIP: running a consumer under another uid needs root (setpriv)"; exit 77; }
command -v setpriv >/dev/null || skip "setpriv missing (util-linux)"
dir=$(mktemp -d) && chmod 755 "$dir"
producer=""
trap '[ -n "$producer" ] && kill "$producer" 2>/dev/null; rm -rf "$dir"' EXIT
# The consumer's own registry: GST_REGISTRY of the test is root's.
as_nobody() {
  GST_REGISTRY="$dir/registry-nobody.bin" setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
}
start_producer() {  # start_producer SOCKET PROPERTIES...: 20 live frames, held until a consumer connects
  sock=$1; shift
  GST_DEBUG=edgetensorsink:2 timeout 60 $GST_LAUNCH -q videotestsrc num-buffers=20 is-live=true ! \
    video/x-raw,format=NV12,width=64,height=48,framerate=30/1 ! \
    edgetensorsink socket-path="$sock" wait-receivers=1 "$@" >"$dir/producer.log" 2>&1 &
  producer=$!
  for _ in $(seq 1 200); do [ -S "$sock" ] && return 0; sleep 0.05; done
  cat "$dir/producer.log"
  fail "the sink did not create $sock"
}
stop_producer() { kill "$producer" 2>/dev/null; wait "$producer" 2>/dev/null; producer=""; }
consume_as_nobody() {  # the consumer's output in $dir/consumer.log; its status returned
  as_nobody timeout 30 $GST_LAUNCH -q edgetensorsrc socket-path="$1" connect-timeout=2000 ! fakesink \
    >"$dir/consumer.log" 2>&1
}

# Allowed: mode 0666, uid 65534 on the allow list. The consumer gets every frame and the end of stream.
start_producer "$dir/a.sock" socket-mode=0666 allow-uids="65534"
[ "$(stat -c %a "$dir/a.sock")" = 666 ] || fail "socket-mode=0666 gave mode $(stat -c %a "$dir/a.sock")"
consume_as_nobody "$dir/a.sock" || { cat "$dir/consumer.log" "$dir/producer.log"; fail "uid 65534 was not served"; }
wait "$producer" || { cat "$dir/producer.log"; fail "the producer failed"; }
producer=""
echo "ok: uid 65534 allowed (socket-mode 0666, allow-uids 65534) received the stream"

# The file mode: 0660 of root's group keeps uid 65534 out at connect.
start_producer "$dir/b.sock" socket-mode=0660
[ "$(stat -c %a "$dir/b.sock")" = 660 ] || fail "socket-mode=0660 gave mode $(stat -c %a "$dir/b.sock")"
if consume_as_nobody "$dir/b.sock"; then cat "$dir/consumer.log"; fail "uid 65534 connected through mode 0660"; fi
grep -q "Permission denied\|EACCES" "$dir/consumer.log" || { cat "$dir/consumer.log"; fail "no EACCES named"; }
grep -q "the socket file's mode 0660 (owner uid 0, gid 0) does not let uid 65534 (gid 65534) write to it" \
  "$dir/consumer.log" || { cat "$dir/consumer.log"; fail "the mode that kept uid 65534 out is not named"; }
stop_producer
echo "ok: socket-mode 0660 refuses uid 65534 at connect (EACCES)"

# The allow rule: mode 0666 lets the connect through, the sink's default rule (its own uid) refuses the peer,
# telling it why (the channel's refuse message): its edgetensorsrc names the refusal, its uid and the path.
start_producer "$dir/c.sock" socket-mode=0666
if consume_as_nobody "$dir/c.sock"; then cat "$dir/consumer.log"; fail "uid 65534 was served without allow-uids"; fi
grep -q "the producer refused this consumer: .*uid 65534 (gid 65534) is not allowed to connect to '$dir/c.sock'" \
  "$dir/consumer.log" || { cat "$dir/consumer.log"; fail "the consumer was not told why it was refused"; }
# Refused, not served: the sink still waits for its first receiver (wait-receivers=1), so it has not ended.
kill -0 "$producer" 2>/dev/null || { cat "$dir/producer.log"; fail "the sink ended: it served the refused peer"; }
# The sink warns about it (its wait for receivers reads the publisher's refusals).
for _ in $(seq 1 100); do grep -q "1 consumer refused so far" "$dir/producer.log" && break; sleep 0.05; done
grep -q "1 consumer refused so far (1 since the last warning)" "$dir/producer.log" ||
  { cat "$dir/producer.log"; fail "the sink did not warn about the refused consumer"; }
echo "ok: without allow-uids the sink refuses uid 65534, naming why, warns, and keeps waiting for an allowed one"
# reconnect=true does not connect again after a refusal (it would be refused again): the consumer fails
# at once, well before its connect-timeout of 20 s.
start=$(date +%s)
if as_nobody timeout 30 $GST_LAUNCH -q edgetensorsrc socket-path="$dir/c.sock" reconnect=true connect-timeout=20000 ! \
   fakesink >"$dir/consumer.log" 2>&1; then cat "$dir/consumer.log"; fail "uid 65534 was served with reconnect=true"; fi
took=$(( $(date +%s) - start ))
grep -q "the producer refused this consumer" "$dir/consumer.log" || { cat "$dir/consumer.log"; fail "reconnect=true: no refusal named"; }
[ "$took" -lt 15 ] || fail "reconnect=true: the refused consumer took $took s (it connected again)"
stop_producer
echo "ok: reconnect=true ends at the refusal (${took} s), without connecting again"

# A malformed list fails the sink at start, naming the property and the entry.
out=$(timeout 30 $GST_LAUNCH -q videotestsrc num-buffers=2 ! video/x-raw,format=NV12,width=64,height=48 ! \
      edgetensorsink socket-path="$dir/d.sock" allow-uids="1000,abc" 2>&1)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "$out"; fail "allow-uids=1000,abc: status $rc"; }
echo "$out" | grep -q "allow-uids '1000,abc': 'abc' is not a numeric id" || { echo "$out"; fail "no named error"; }
echo "ok: allow-uids=1000,abc refused, naming 'abc'"
