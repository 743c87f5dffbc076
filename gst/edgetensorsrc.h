/* SPDX-License-Identifier: Apache-2.0 */
/* edgetensorsrc: a live source of the frames an edgetensor producer sends on a named socket (the frame
 * channel), each pushed as a GstBuffer over the received memory (fd memory with GstVideoMeta), no copy
 * (docs/GSTREAMER.md). */
#ifndef ET_GST_SRC_H
#define ET_GST_SRC_H

#include <gst/base/gstpushsrc.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_EDGETENSOR_SRC (gst_edgetensor_src_get_type())
G_DECLARE_FINAL_TYPE(GstEdgetensorSrc, gst_edgetensor_src, GST, EDGETENSOR_SRC, GstPushSrc)

G_END_DECLS

#endif /* ET_GST_SRC_H */
