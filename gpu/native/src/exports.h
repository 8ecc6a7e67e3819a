// Functions the addon exports to JavaScript, each registered by the file that defines it.
#pragma once
#include <node_api.h>

#include <vector>

namespace triad {

struct Export {
  const char* name;
  napi_callback fn;
};

std::vector<Export>& exports_registry();

struct ExportRegistrar {
  ExportRegistrar(const char* name, napi_callback fn) { exports_registry().push_back({name, fn}); }
};

}  // namespace triad

/** Registers `fn` (a napi_callback) as the addon's export `name`. */
#define TRIAD_EXPORT(name, fn) static ::triad::ExportRegistrar triad_export_##fn(name, fn)
