{
  "targets": [
    {
      "target_name": "triad_native",
      "sources": ["<!@(ls -1 src/*.cc)"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-O3", "-march=native", "-ffp-contract=fast", "-fexceptions"],
      "cflags!": ["-fno-exceptions"],
      "libraries": ["-ldl", "-lpthread"]
    }
  ]
}
