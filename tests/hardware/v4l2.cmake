# Real V4L2 capture from vivid, the kernel's virtual camera (label hardware): its own binary, like the
# DMA-BUF one. The tests skip with the reason where no vivid capture node exists; with
# ET_V4L2_REQUIRE_DEVICES=1 (the kernel lane, tests/kernel/v4l2_lane.sh) they fail instead.
# ET_V4L2_TEST_EDGETENSOR=OFF builds only the V4L2 part (capture, VIDIOC_EXPBUF, mmap comparison),
# which needs nothing of edgetensor. Included from tests/CMakeLists.txt.
option(ET_V4L2_TEST_EDGETENSOR "V4L2 capture test: also import the frames into edgetensor" ON)
if(ET_WITH_DMABUF)
  add_executable(edgetensor_v4l2_hw_tests ${CMAKE_CURRENT_LIST_DIR}/v4l2_capture_test.cpp
                                          ${CMAKE_CURRENT_LIST_DIR}/v4l2_device.cpp)
  if(ET_V4L2_TEST_EDGETENSOR)
    target_link_libraries(edgetensor_v4l2_hw_tests PRIVATE et_test_support GTest::gtest_main)
  else()
    target_compile_definitions(edgetensor_v4l2_hw_tests PRIVATE ET_V4L2_TEST_EDGETENSOR=0)
    target_link_libraries(edgetensor_v4l2_hw_tests PRIVATE GTest::gtest_main et_warnings et_test_flags)
  endif()
  gtest_discover_tests(edgetensor_v4l2_hw_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS hardware)
endif()
