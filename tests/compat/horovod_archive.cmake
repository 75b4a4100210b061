# The prebuilt Horovod 0.28.1 of ../shared/thirdparty (checked against its sha256), unpacked
# into the build tree by the target horovod_unpacked. Sets HVDRUN_HOROVOD_DIR (empty if not
# available) and HVDRUN_HOROVOD_SKIP (why not). Included by tests/CMakeLists.txt.
set(HVDRUN_HOROVOD_ARCHIVE
  "${PROJECT_SOURCE_DIR}/../shared/thirdparty/horovod-0.28.1-torch1.13-py3.11-cpu.tar.xz"
  CACHE FILEPATH "Prebuilt Horovod 0.28.1 for the compatibility tests")
set(_horovod_sha256 994d890b9c18a53d7e0a68177cf4755db92dbb3f9ec4292b3ab2c14333881339)
set(HVDRUN_HOROVOD_DIR "")
set(HVDRUN_HOROVOD_SKIP "")
if(NOT EXISTS "${HVDRUN_HOROVOD_ARCHIVE}")
  set(HVDRUN_HOROVOD_SKIP "no Horovod archive at ${HVDRUN_HOROVOD_ARCHIVE} (set HVDRUN_HOROVOD_ARCHIVE)")
else()
  file(SHA256 "${HVDRUN_HOROVOD_ARCHIVE}" _sha256)
  if(NOT _sha256 STREQUAL _horovod_sha256)
    set(HVDRUN_HOROVOD_SKIP "${HVDRUN_HOROVOD_ARCHIVE} has sha256 ${_sha256}, expected ${_horovod_sha256}")
  else()
    set(_unpacked ${CMAKE_CURRENT_BINARY_DIR}/horovod-0.28.1-prebuilt)
    set(HVDRUN_HOROVOD_DIR ${_unpacked}/horovod-0.28.1)
    add_custom_command(OUTPUT ${_unpacked}/unpacked.stamp
      COMMAND ${CMAKE_COMMAND} -E rm -rf ${_unpacked}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_unpacked}
      COMMAND ${CMAKE_COMMAND} -E chdir ${_unpacked} ${CMAKE_COMMAND} -E tar xf "${HVDRUN_HOROVOD_ARCHIVE}"
      COMMAND ${CMAKE_COMMAND} -E touch ${_unpacked}/unpacked.stamp
      DEPENDS "${HVDRUN_HOROVOD_ARCHIVE}"
      COMMENT "Unpacking Horovod 0.28.1 for the compatibility tests")
    add_custom_target(horovod_unpacked ALL DEPENDS ${_unpacked}/unpacked.stamp)
  endif()
endif()
if(HVDRUN_HOROVOD_SKIP)
  message(STATUS "hvdrun: Horovod compatibility tests will skip: ${HVDRUN_HOROVOD_SKIP}")
endif()

