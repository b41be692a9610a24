# Fails when the archive LIBRARY (libctower.a) defines or references any
# libyaml symbol (yaml_*): the YAML config is src/config's alone.
# Usage: cmake -DNM=nm -DLIBRARY=path/libctower.a -P lib_without_yaml.cmake
execute_process(COMMAND ${NM} ${LIBRARY} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc
                ERROR_VARIABLE errors)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${LIBRARY} failed (${rc}): ${errors}")
endif()
string(REGEX MATCHALL "[ \t][A-Za-z][ \t]yaml_[A-Za-z0-9_]*" uses "${symbols}")
if(uses)
  list(REMOVE_DUPLICATES uses)
  string(REPLACE ";" "\n  " uses "${uses}")
  message(FATAL_ERROR "${LIBRARY} uses libyaml, which only the config library may:\n  ${uses}")
endif()
message(STATUS "${LIBRARY}: no libyaml symbol")
