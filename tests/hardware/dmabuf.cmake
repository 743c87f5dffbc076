# Real-kernel DMA-BUF tests (label hardware;dmabuf): skip with the reason where /dev/dma_heap/system or
# /dev/udmabuf are missing; with ET_DMABUF_REQUIRE_DEVICES=1 (the kernel lane) they fail instead.
# Included from tests/CMakeLists.txt.
if(ET_WITH_DMABUF)
  add_executable(edgetensor_dmabuf_peer ${CMAKE_CURRENT_LIST_DIR}/dmabuf_peer.cpp)
  target_link_libraries(edgetensor_dmabuf_peer PRIVATE edgetensor_static et_warnings et_test_flags)
  add_executable(edgetensor_dmabuf_hw_tests ${CMAKE_CURRENT_LIST_DIR}/dmabuf_test.cpp)
  target_link_libraries(edgetensor_dmabuf_hw_tests PRIVATE et_test_support GTest::gtest_main)
  add_dependencies(edgetensor_dmabuf_hw_tests edgetensor_dmabuf_peer)
  gtest_discover_tests(edgetensor_dmabuf_hw_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS hardware)
  # Explicit sync on a real kernel (fence_test.cpp): the heap's stub fences, and vgem's real ones where
  # the vgem module is loaded (ET_FENCE_REQUIRE_VGEM=1, set by the kernel lane, fails without it); the
  # same through the C API (fence_capi_test.cpp, libedgetensor-c.so) and fences on the frame channel
  # (fence_channel_test.cpp), in the same binary so the lane's one vgem boot runs them all.
  add_executable(edgetensor_fence_hw_tests ${CMAKE_CURRENT_LIST_DIR}/fence_test.cpp
                                           ${CMAKE_CURRENT_LIST_DIR}/fence_capi_test.cpp
                                           ${CMAKE_CURRENT_LIST_DIR}/fence_channel_test.cpp)
  target_link_libraries(edgetensor_fence_hw_tests PRIVATE et_test_support edgetensor::edgetensor-c GTest::gtest_main)
  # The C++ cases' static testing library keeps its symbols to itself: exported, they would take the
  # place of libedgetensor.so's under libedgetensor-c.so (one half-shared copy). So the C cases run on
  # the shipped libedgetensor-c.so and libedgetensor.so, as a C program does; the two copies share no
  # object.
  target_link_options(edgetensor_fence_hw_tests PRIVATE -Wl,--exclude-libs,libedgetensor_testing.a)
  gtest_discover_tests(edgetensor_fence_hw_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS hardware)
endif()
