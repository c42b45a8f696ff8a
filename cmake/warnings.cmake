# One place for compiler flags shared by every target of the project.
add_library(hostlm_flags INTERFACE)
target_compile_options(hostlm_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wno-unused-parameter
  # GCC 12 reports false -Wrestrict positives inside std::string concatenation at -O3.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>
  $<$<BOOL:${HOSTLM_WERROR}>:-Werror>)
if(HOSTLM_SANITIZE)
  target_compile_options(hostlm_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                               -fno-sanitize-recover=undefined)
  target_link_options(hostlm_flags INTERFACE -fsanitize=address,undefined)
endif()
