// Command-line driver for the TACOS all-gather synthesiser, compiled against the peer by
// bench/tacos_reference.py (hw-models code, not the peer's).
// usage: driver KIND X Y Z BW_GIBPS LAT_US BUFFER_BYTES CHUNKS_PER_NPU TRIALS
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <tacos/collective/all_gather.h>
#include <tacos/event_queue/timer.h>
#include <tacos/synthesizer/synthesizer.h>
#include <tacos/topology/hypercube_3d.h>
#include <tacos/topology/mesh_2d.h>
#include <tacos/topology/torus_2d.h>
#include <tacos/topology/torus_3d.h>
using namespace tacos;
int main(int argc, char** argv) {
    if (argc != 10) { std::cerr << "usage: driver KIND X Y Z BW LAT BUFFER CHUNKS TRIALS\n"; return 2; }
    const std::string kind = argv[1];
    const int x = std::atoi(argv[2]), y = std::atoi(argv[3]), z = std::atoi(argv[4]);
    const double bw = std::atof(argv[5]), lat = std::atof(argv[6]);
    const long long buffer = std::atoll(argv[7]);
    const int chunks = std::atoi(argv[8]), trials = std::atoi(argv[9]);
    std::unique_ptr<Topology> topo;
    if (kind == "mesh2d") topo = std::make_unique<Mesh2D>(x, y, bw, lat);
    else if (kind == "torus2d") topo = std::make_unique<Torus2D>(x, y, bw, lat);
    else if (kind == "torus3d") topo = std::make_unique<Torus3D>(x, y, z, bw, lat);
    else if (kind == "hypercube3d") topo = std::make_unique<Hypercube3D>(x, y, z, bw, lat);
    else { std::cerr << "unknown kind " << kind << "\n"; return 2; }
    const int n = topo->npusCount();
    std::cout.precision(17);
    for (int s = 0; s < n; ++s)
        for (int d = 0; d < n; ++d)
            if (s != d && topo->connected(s, d)) std::cout << "link " << s << " " << d << "\n";
    const auto collective = AllGather(n, chunks);
    const Collective::ChunkSize chunkSize = buffer / (n * chunks);
    std::cout << "chunk_bytes " << chunkSize << "\n";
    for (int t = 0; t < trials; ++t) {
        auto timer = Timer();
        timer.start();
        auto synthesizer = Synthesizer();
        const auto time = synthesizer.solve(*topo, collective, chunkSize);
        timer.stop();
        std::cout << "trial " << t << " time_us " << time << " solve_us " << timer.time() << "\n";
    }
    return 0;
}
