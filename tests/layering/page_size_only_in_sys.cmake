# Fails when a file under SRC other than src/base/sys.cpp asks the system for the page size or writes
# one down (4096, 4095, 0x1000, 0xfff, PAGE_SIZE, getpagesize, sysconf(_SC_PAGESIZE), AT_PAGESZ).
# Page sizes are 4, 16 or 64 KiB depending on the kernel (Raspberry Pi 5: 16 KiB): everything that
# rounds, aligns or sizes by page calls sys::page_size(), which tests can set to another size.
file(GLOB_RECURSE files ${SRC}/*.h ${SRC}/*.cpp)
list(FILTER files EXCLUDE REGEX "^${SRC}/base/sys\\.cpp$")
set(re "(^|[^0-9A-Za-z_])(4096|4095|0x1000|0xfff|PAGE_SIZE|_SC_PAGESIZE|_SC_PAGE_SIZE|getpagesize|AT_PAGESZ)([^0-9A-Za-z_]|$)")
set(skip_comments ON)  # comments may name sizes
set(why "use sys::page_size() (src/base/sys.h) instead of a page size of your own")
set(what "under src/: the page size comes only from sys::page_size()")
include(${CMAKE_CURRENT_LIST_DIR}/forbid_lines.cmake)
