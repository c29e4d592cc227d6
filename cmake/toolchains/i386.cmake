# Cross toolchain: i386 (i686-linux-gnu-g++, Debian package g++-i686-linux-gnu). Runs natively on an x86-64 kernel (static binaries). -msse2 -mfpmath=sse: SSE2 scalar float math (every x86 CPU since 2003), so results do not depend on x87 excess precision; Highway's static target is then its scalar fallback.
set(fgemma_triple i686-linux-gnu)
set(fgemma_processor i686)
set(fgemma_flags "-msse2 -mfpmath=sse")

include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")
