# cmake -DFILE=<elf> -DRUNPATH=<value> -P set_runpath.cmake: replaces the runpath of a binary copied from a
# build tree (setup.py; the build tree's runpath is longer than the new value, so it fits in place).
file(RPATH_SET FILE "${FILE}" NEW_RPATH "${RUNPATH}")
