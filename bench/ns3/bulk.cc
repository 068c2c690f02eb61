// The simulator benchmarks (a) and (b) of BENCHMARKS.md written for ns-3 (3.37, as Debian
// packages it: `apt-get install libns3-dev`), for the speed ratio issue "Speed at scale" asks
// for. One sender, one receiver, one point-to-point link; a BulkSend application over NewReno
// (ns-3's Reno), 1,448-byte segments, a drop-tail buffer of N packets at the bottleneck and
// no traffic-control layer (so the device queue is the only buffer, as in mpsched).
//
//   (a) 100 Mbit/s, RTT 40 ms, 333 packets, 60 s      bulk a
//   (b) 1 Gbit/s,   RTT 20 ms, 1,727 packets (1 BDP), 10 s   bulk b
//
// Prints one line: case, simulated seconds, data packets the sender's device transmitted,
// wall and CPU seconds of Simulator::Run(), packets per wall and per CPU second, and the
// receiver's goodput.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

using namespace ns3;

static uint64_t g_sent = 0;

static void
OnSenderTx(Ptr<const Packet>)
{
    g_sent++;
}

int
main(int argc, char* argv[])
{
    std::string which = argc > 1 ? argv[1] : "a";
    double rate_bps, rtt_s, secs;
    uint32_t buffer_pkts;
    if (which == "a")
    {
        rate_bps = 100e6;
        rtt_s = 0.040;
        buffer_pkts = 333;
        secs = 60;
    }
    else if (which == "b")
    {
        rate_bps = 1e9;
        rtt_s = 0.020;
        // 1 BDP of 1,500-byte packets: 1e9 * 0.020 / 8 / 1500 = 1,667; the scenario's 20 ms
        // buffer at 1 Gbit/s, counted as mpsched counts it (bytes / 1,448-byte segments).
        buffer_pkts = 1727;
        secs = 10;
    }
    else
    {
        std::fprintf(stderr, "usage: bulk a|b [seconds]\n");
        return 2;
    }
    if (argc > 2)
    {
        secs = std::stod(argv[2]);
    }

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    // Buffers large enough that the receive window never limits the transfer (mpsched's
    // benchmark runs with the default, autotuned buffer; the bottleneck buffer limits).
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(64 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(64 << 20));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));

    NodeContainer nodes;
    nodes.Create(2);
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(rate_bps))));
    p2p.SetChannelAttribute("Delay", TimeValue(Seconds(rtt_s / 2)));
    p2p.SetQueue("ns3::DropTailQueue",
                 "MaxSize",
                 QueueSizeValue(QueueSize(std::to_string(buffer_pkts) + "p")));
    NetDeviceContainer devs = p2p.Install(nodes);

    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    Ipv4InterfaceContainer ifs = addr.Assign(devs);
    // No queue discipline above the device (Assign installed pfifo_fast): the device's
    // drop-tail queue is the buffer.
    TrafficControlHelper tch;
    tch.Uninstall(devs);

    uint16_t port = 5201;
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(1), port));
    bulk.SetAttribute("MaxBytes", UintegerValue(0));
    bulk.SetAttribute("SendSize", UintegerValue(1448 * 64));
    ApplicationContainer src = bulk.Install(nodes.Get(0));
    src.Start(Seconds(0));
    src.Stop(Seconds(secs));
    PacketSinkHelper sinkh("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sink = sinkh.Install(nodes.Get(1));
    sink.Start(Seconds(0));

    devs.Get(0)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&OnSenderTx));
    Simulator::Stop(Seconds(secs));

    std::clock_t c0 = std::clock();
    auto w0 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto w1 = std::chrono::steady_clock::now();
    std::clock_t c1 = std::clock();

    double wall = std::chrono::duration<double>(w1 - w0).count();
    double cpu = double(c1 - c0) / CLOCKS_PER_SEC;
    uint64_t rx = DynamicCast<PacketSink>(sink.Get(0))->GetTotalRx();
    std::printf("case %s sim_s %.0f data_packets %llu wall_s %.3f cpu_s %.3f "
                "pkts_per_wall_s %.0f pkts_per_cpu_s %.0f goodput_mbps %.2f\n",
                which.c_str(),
                secs,
                (unsigned long long)g_sent,
                wall,
                cpu,
                g_sent / wall,
                g_sent / cpu,
                rx * 8.0 / secs / 1e6);
    Simulator::Destroy();
    return 0;
}
