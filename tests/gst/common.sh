# Shared by the gstreamer.* shell tests: fail, skip (77; a failure when EDGETENSOR_REQUIRE_GSTREAMER=1), a
# check that a GStreamer element exists, and $GST_LAUNCH / $GST_INSPECT (unquoted: in a sanitizer build they
# run under `env LD_PRELOAD=<the runtime>`, ET_GST_PRELOAD, to load the instrumented plugin).
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() {
  if [ "${EDGETENSOR_REQUIRE_GSTREAMER:-0}" = 1 ]; then fail "required (EDGETENSOR_REQUIRE_GSTREAMER=1): $*"; fi
  echo "SKIP: $*"; exit 77
}
need_element() { $GST_INSPECT "$1" >/dev/null 2>&1 || skip "GStreamer element $1 missing ($2)"; }
# No leak check there: those programs are GStreamer's, which keeps its registry and types alive at exit.
if [ -n "${ET_GST_PRELOAD:-}" ]; then
  GST_LAUNCH="env LD_PRELOAD=$ET_GST_PRELOAD ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 $GST_LAUNCH"
  GST_INSPECT="env LD_PRELOAD=$ET_GST_PRELOAD ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 $GST_INSPECT"
fi
