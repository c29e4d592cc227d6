// The engine's version, written once: CMake's project(VERSION) reaches this file's source as a
// definition; the C API (fgemma_version), the CLI (--version) and package files all read it.
#pragma once

namespace fgemma {

const char* VersionString();  // "MAJOR.MINOR.PATCH"

}  // namespace fgemma
