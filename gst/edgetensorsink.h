/* SPDX-License-Identifier: Apache-2.0 */
/* edgetensorsink: publishes raw video frames to edgetensor consumers on a named socket (the frame channel's
 * Publisher), zero-copy where upstream writes into its pool (docs/GSTREAMER.md). */
#ifndef ET_GST_SINK_H
#define ET_GST_SINK_H

#include <gst/base/gstbasesink.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_EDGETENSOR_SINK (gst_edgetensor_sink_get_type())
G_DECLARE_FINAL_TYPE(GstEdgetensorSink, gst_edgetensor_sink, GST, EDGETENSOR_SINK, GstBaseSink)

G_END_DECLS

#endif /* ET_GST_SINK_H */
