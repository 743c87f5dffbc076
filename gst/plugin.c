/* SPDX-License-Identifier: Apache-2.0 */
/* The gstedgetensor plugin: edgetensorsink and edgetensorsrc (docs/GSTREAMER.md). */
#include "edgetensorsink.h"
#include "edgetensorsrc.h"

#include <gst/gst.h>

static gboolean plugin_init(GstPlugin* plugin) {
  return gst_element_register(plugin, "edgetensorsink", GST_RANK_NONE, GST_TYPE_EDGETENSOR_SINK) &&
         gst_element_register(plugin, "edgetensorsrc", GST_RANK_NONE, GST_TYPE_EDGETENSOR_SRC);
}

#define PACKAGE "edgetensor"
GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, edgetensor,
                  "Zero-copy frames between GStreamer and edgetensor consumers (the frame channel)", plugin_init,
                  ET_GST_VERSION, "Apache 2.0", "edgetensor", "Unknown package origin")
