# Installs one pkg-config file at install time (cmake/install.cmake): ET_PC_FILE, the configured .pc whose
# prefix line is relative to the file (${pcfiledir}/../..), into <prefix>/ET_PC_LIBDIR/pkgconfig. Under the
# system prefixes /usr and /usr/local (CMAKE_INSTALL_PREFIX as the install runs: cpack's /usr, or
# `cmake --install --prefix`), the prefix line names that prefix instead.
get_filename_component(et_pc_name "${ET_PC_FILE}" NAME)
set(et_pc_source "${ET_PC_FILE}")
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR CMAKE_INSTALL_PREFIX STREQUAL "/usr/local")
  file(READ "${ET_PC_FILE}" et_pc_text)
  string(REGEX REPLACE "^prefix=[^\n]*" "prefix=${CMAKE_INSTALL_PREFIX}" et_pc_text "${et_pc_text}")
  get_filename_component(et_pc_dir "${ET_PC_FILE}" DIRECTORY)
  set(et_pc_source "${et_pc_dir}/pc-system-prefix/${et_pc_name}")
  file(WRITE "${et_pc_source}" "${et_pc_text}")
endif()
# file(INSTALL) honours DESTDIR (cpack's staging directory) and records the file in install_manifest.txt.
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${ET_PC_LIBDIR}/pkgconfig" TYPE FILE FILES "${et_pc_source}")
