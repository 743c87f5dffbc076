/* SPDX-License-Identifier: Apache-2.0 */
/* The built plugin loads into a GStreamer process of its own architecture and makes both elements, with
 * their main properties and pad templates: gst-inspect-1.0's check (inspect_test.sh) for trees whose
 * plugin the build machine's gst-inspect-1.0 cannot load (cross builds, run under QEMU user mode).
 *   usage: et_gst_load_test PLUGIN_FILE EXPECTED_VERSION
 * Exit 0 when both elements are made; 1 naming what is missing. C11, GStreamer only. */
#include <gst/gst.h>

#include <stdio.h>
#include <string.h>

/* Element NAME from the loaded plugin, with PROPS (NULL-ended) and a pad template of DIRECTION. */
static int check_element(const char* name, const char* const* props, GstPadDirection direction) {
  GstElement* element = gst_element_factory_make(name, NULL);
  if (element == NULL) {
    fprintf(stderr, "gst_element_factory_make(\"%s\") failed: the plugin does not register it\n", name);
    return 1;
  }
  int rc = 0;
  for (const char* const* p = props; *p != NULL; ++p) {
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(element), *p) == NULL) {
      fprintf(stderr, "%s has no property '%s'\n", name, *p);
      rc = 1;
    }
  }
  GstPadTemplate* templ = gst_element_class_get_pad_template(GST_ELEMENT_GET_CLASS(element),
                                                             direction == GST_PAD_SINK ? "sink" : "src");
  if (templ == NULL || GST_PAD_TEMPLATE_DIRECTION(templ) != direction) {
    fprintf(stderr, "%s has no %s pad template\n", name, direction == GST_PAD_SINK ? "sink" : "src");
    rc = 1;
  }
  gst_object_unref(element);
  return rc;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PLUGIN_FILE EXPECTED_VERSION\n", argv[0]);
    return 2;
  }
  gst_init(NULL, NULL);
  GError* error = NULL;
  GstPlugin* plugin = gst_plugin_load_file(argv[1], &error);
  if (plugin == NULL) {
    fprintf(stderr, "gst_plugin_load_file(%s): %s\n", argv[1], error != NULL ? error->message : "no reason given");
    g_clear_error(&error);
    return 1;
  }
  int rc = 0;
  if (strcmp(gst_plugin_get_name(plugin), "edgetensor") != 0 || strcmp(gst_plugin_get_version(plugin), argv[2]) != 0) {
    fprintf(stderr, "%s is plugin '%s' %s, not 'edgetensor' %s\n", argv[1], gst_plugin_get_name(plugin),
            gst_plugin_get_version(plugin), argv[2]);
    rc = 1;
  }
  static const char* const sink_props[] = {"socket-path", "policy", "max-frames-out", "pool-size", "stats", NULL};
  static const char* const src_props[] = {"socket-path", "connect-timeout", "latest", "reconnect", "stats", NULL};
  rc |= check_element("edgetensorsink", sink_props, GST_PAD_SINK);
  rc |= check_element("edgetensorsrc", src_props, GST_PAD_SRC);
  if (rc == 0)
    printf("plugin edgetensor %s from %s: edgetensorsink and edgetensorsrc made, properties and pad templates present\n",
           gst_plugin_get_version(plugin), argv[1]);
  gst_object_unref(plugin);
  return rc;
}
