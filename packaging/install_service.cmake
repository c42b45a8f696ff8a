# Runs at install time (`cmake --install`, cpack): puts the systemd unit and its environment
# file where the prefix being installed to wants them. The unit in the sources is the one
# for prefix /usr (the Debian package); for any other prefix the paths it names are rewritten.
# Set by packaging/CMakeLists.txt: HOSTLM_SERVICE_SOURCE_DIR, HOSTLM_SERVICE_WORK_DIR,
# HOSTLM_SERVICE_BINDIR and HOSTLM_SERVICE_DOCDIR (GNUInstallDirs' values).

string(REGEX REPLACE "/+$" "" prefix "${CMAKE_INSTALL_PREFIX}")
# Configuration goes to /etc for the system prefix, as GNUInstallDirs does for /usr; the
# unit goes to Debian 12's system unit folder (systemd also reads <prefix>/lib/systemd/system
# for /usr/local).
if(prefix STREQUAL "/usr" OR prefix STREQUAL "")
  set(etc_dir "/etc")
  set(unit_dir "/lib/systemd/system")
else()
  set(etc_dir "${prefix}/etc")
  set(unit_dir "${prefix}/lib/systemd/system")
endif()

function(hostlm_abs out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
hostlm_abs(bin_dir "${HOSTLM_SERVICE_BINDIR}")
hostlm_abs(doc_dir "${HOSTLM_SERVICE_DOCDIR}")

file(READ "${HOSTLM_SERVICE_SOURCE_DIR}/hostlm.service" unit)
foreach(pair "/usr/bin/hostlm|${bin_dir}/hostlm" "/etc/default/hostlm|${etc_dir}/default/hostlm"
             "/usr/share/doc/hostlm/|${doc_dir}/")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 from)
  list(GET pair 1 to)
  string(FIND "${unit}" "${from}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "hostlm.service no longer names ${from}; update install_service.cmake")
  endif()
  string(REPLACE "${from}" "${to}" unit "${unit}")
endforeach()

# A private folder per install run: a test may install two prefixes from one build at once.
string(RANDOM LENGTH 12 run_id)
set(work "${HOSTLM_SERVICE_WORK_DIR}/${run_id}")
file(WRITE "${work}/hostlm.service" "${unit}")
file(INSTALL DESTINATION "${unit_dir}" TYPE FILE
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ FILES "${work}/hostlm.service")
file(REMOVE_RECURSE "${work}")

# The settings file may hold an API key, so only its owner reads it; the Debian package gives
# the service's group read access (dpkg-statoverride, root:hostlm 0640). An existing one
# is the administrator's: installing over a live system keeps it (the Debian package marks
# it a conffile, so dpkg asks instead).
set(env_target "$ENV{DESTDIR}${etc_dir}/default/hostlm")
if(EXISTS "${env_target}" AND "$ENV{DESTDIR}" STREQUAL "")
  message(STATUS "Keeping: ${env_target} (new defaults in ${HOSTLM_SERVICE_SOURCE_DIR}/hostlm.env)")
else()
  file(INSTALL DESTINATION "${etc_dir}/default" TYPE FILE RENAME hostlm
       PERMISSIONS OWNER_READ OWNER_WRITE FILES "${HOSTLM_SERVICE_SOURCE_DIR}/hostlm.env")
endif()
