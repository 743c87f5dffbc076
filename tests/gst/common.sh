# Shared by the gst.* shell tests: fail, skip (77; a failure when EDGETENSOR_REQUIRE_GSTREAMER=1), and a
# check that a GStreamer element exists.
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() {
  if [ "${EDGETENSOR_REQUIRE_GSTREAMER:-0}" = 1 ]; then fail "required (EDGETENSOR_REQUIRE_GSTREAMER=1): $*"; fi
  echo "SKIP: $*"; exit 77
}
need_element() { "$GST_INSPECT" "$1" >/dev/null 2>&1 || skip "GStreamer element $1 missing ($2)"; }
