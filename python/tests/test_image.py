# SPDX-License-Identifier: Apache-2.0
"""Image metadata as edgetensor/image.h defines it: layouts, planes, colorimetry, quantization, Frame."""

import os

import numpy
import pytest

import edgetensor as et


def nv12_layout(w=64, h=48, stride=64, uv_offset=None):
    uv = stride * h if uv_offset is None else uv_offset
    return et.ImageLayout(et.PixelFormat.NV12, w, h, [(0, stride), et.PlaneLayout(uv, stride)])


def test_pixel_formats():
    assert et.PixelFormat.from_name("nv12") == et.PixelFormat.NV12
    assert et.PixelFormat.NV12.plane_count == 2 and et.PixelFormat.BAYER_RGGB8.plane_count == 1
    with pytest.raises(et.InvalidArgumentError, match="nv99"):
        et.PixelFormat.from_name("nv99")


def test_layout_make_and_sizes():
    layout = et.ImageLayout.make(65, 33, "nv12", row_align=64, height_align=16)
    assert (layout.format, layout.width, layout.height, layout.plane_count) == (et.PixelFormat.NV12, 65, 33, 2)
    assert layout.planes == (et.PlaneLayout(0, 128), et.PlaneLayout(128 * 48, 128))
    assert layout.plane_rows(1) == 17 and layout.plane_row_bytes(1) == 66
    assert layout.min_buffer_bytes() == 128 * 48 + 16 * 128 + 66
    assert et.ImageLayout.allocation_bytes(65, 33, "nv12", 64, 16) == 128 * 48 + 24 * 128
    assert layout == et.ImageLayout.make(65, 33, et.PixelFormat.NV12, 64, 16)
    assert layout.modifier == 0 and "NV12" in repr(layout)
    with pytest.raises(et.InvalidArgumentError):
        et.ImageLayout.make(0, 10, "rgb")
    with pytest.raises(et.InvalidArgumentError, match="power of two"):
        et.ImageLayout.make(10, 10, "rgb", row_align=3)


def test_layout_validate_names_the_plane():
    bad = nv12_layout(stride=32)  # stride below the 64 row bytes
    with pytest.raises(et.InvalidArgumentError, match="plane 0"):
        bad.validate()
    with pytest.raises(et.OutOfRangeError):
        nv12_layout().validate(100)
    nv12_layout().validate(64 * 48 * 3 // 2)


def test_allocate_image_planes_and_view():
    im = et.allocate_image(64, 48, "nv12", memory="shm", name="cam")
    assert im.pixel_format == et.PixelFormat.NV12 and im.image_plane is None
    assert im.image_layout == nv12_layout()
    y, uv = im.plane(0), im.plane(1)
    assert (y.shape, y.strides, y.image_plane) == ((48, 64), (64, 1), 0)
    assert (uv.shape, uv.strides, uv.image_plane, uv.offset_bytes) == ((24, 32, 2), (64, 2, 1), 1, 64 * 48)
    assert y.image_layout is None and uv.pixel_format == et.PixelFormat.NV12
    with pytest.raises(et.OutOfRangeError):
        im.plane(2)
    with pytest.raises(et.FailedPreconditionError):
        im.image_view()  # subsampled multi-plane: use plane()
    rgb = et.allocate_image(et.ImageLayout.make(8, 4, "planar_rgb"))
    assert rgb.image_view().shape == (3, 4, 8)
    with pytest.raises(et.FailedPreconditionError):
        et.allocate((4,), "u8").plane(0)


def test_set_and_clear_layout_metadata_rule():
    t = et.allocate((64 * 48 * 3 // 2,), "uint8", "shm")
    t.set_image_layout(nv12_layout())
    assert t.pixel_format == et.PixelFormat.NV12
    assert t.reshape(t.size).image_layout == t.image_layout  # same first byte and extent: kept
    assert t.batch(0).pixel_format == et.PixelFormat.UNKNOWN  # dropped
    t.clear_image_layout()
    assert t.image_layout is None
    with pytest.raises(et.OutOfRangeError):
        et.allocate((100,), "u8").set_image_layout(nv12_layout())


def test_colorimetry():
    t = et.allocate_image(16, 16, "rgb")
    assert t.colorimetry == et.Colorimetry()
    c = et.Colorimetry(et.ColorPrimaries.BT709, et.TransferFunction.SRGB, et.YcbcrMatrix.IDENTITY, et.ColorRange.FULL)
    t.colorimetry = c
    assert t.colorimetry == c and t.plane(0).colorimetry == c and t.batch(1).colorimetry == c
    assert "bt709" in repr(c)


def test_quantization():
    t = et.allocate((4, 3), "int8")
    assert t.quantization.kind == et.QuantizationKind.NONE
    t.quantization = et.Quantization.per_tensor(0.5, -3)
    assert (t.quantization.scales, t.quantization.zero_points) == ((0.5,), (-3,))
    assert t.batch(1).quantization == t.quantization
    t.quantization = et.Quantization.per_axis(1, [0.5, 0.25, 0.125], [0, 1, 2])
    assert t.quantization.axis == 1 and t.slice(1, 1, 3).quantization.scales == (0.25, 0.125)
    with pytest.raises(et.InvalidArgumentError):
        t.quantization = et.Quantization.per_tensor(0.5, 300)  # not representable in int8
    with pytest.raises(et.InvalidArgumentError):
        et.Quantization.per_tensor(-1.0, 0)
    with pytest.raises(et.InvalidArgumentError):
        et.allocate((2,), "float32").quantization = et.Quantization.per_tensor(1.0, 0)


def test_frame_from_tensor_and_import_planes():
    layout = et.ImageLayout.make(32, 16, "nv12")
    f = et.Frame.allocate(layout, memory="shm")
    assert (f.plane_count, f.buffer_count, f.layout) == (2, 1, layout)
    assert f.plane(1).shape == (8, 16, 2) and f.plane_buffer(1) == 0
    # Two separate buffers, one fd each (V4L2 NV12M).
    y = et.allocate((16 * 32,), "uint8", "shm")
    uv = et.allocate((8 * 32,), "uint8", "shm")
    two = et.ImageLayout(et.PixelFormat.NV12, 32, 16, [(0, 32), (0, 32)])
    fds = [y.export_fd(), uv.export_fd()]
    try:
        g = et.Frame.import_planes(fds, two)
    finally:
        for fd in fds:
            os.close(fd)
    assert g.buffer_count == 2 and g.buffer(1).same_buffer(uv)
    out = g.export_plane_fds()
    assert len(out) == 2
    for fd in out:
        os.close(fd)
    with pytest.raises(et.InvalidArgumentError):
        et.Frame.from_tensor(et.allocate((4,), "u8"))
    assert et.Frame.from_tensor(et.allocate_image(32, 16, "nv12")).buffer_count == 1
