// The ns-3 side of the simulator speed comparison (bench/ns3/run.sh): a
// 10 MB TCP NewReno transfer over one 10 Mbit/s, 20 ms point-to-point link
// with a 100-packet drop-tail queue (no queue disc), or split evenly over two
// such links (--links=2: mainline ns-3 has no MPTCP or MPQUIC, so two TCP
// flows, one per link, are the closest equal workload).
//
// It prints one line: the bytes received, the simulated completion time (the
// last byte's arrival at the sinks, so that it can be set beside hetquic's
// fct for the same transfer), the events executed, and the wall time of
// Simulator::Run alone (the loop, without process start and topology set-up).
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>

using namespace ns3;

static uint64_t g_rx = 0;
static uint64_t g_bytes = 0;
static Time g_done;

// OnRx counts bytes at every sink and notes when the last one arrives.
static void OnRx(Ptr<const Packet> p, const Address&) {
  g_rx += p->GetSize();
  if (g_rx >= g_bytes && g_done.IsZero()) {
    g_done = Simulator::Now();
  }
}

int main(int argc, char* argv[]) {
  uint32_t links = 1;
  uint64_t bytes = 10000000;
  CommandLine cmd;
  cmd.AddValue("links", "number of parallel links (1 or 2)", links);
  cmd.AddValue("bytes", "bytes to transfer in all", bytes);
  cmd.Parse(argc, argv);
  g_bytes = bytes;

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(16 << 20));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(16 << 20));

  NodeContainer nodes;
  nodes.Create(2);
  InternetStackHelper stack;
  stack.Install(nodes);
  PointToPointHelper p2p;
  p2p.SetDeviceAttribute("DataRate", StringValue("10Mbps"));
  p2p.SetChannelAttribute("Delay", StringValue("20ms"));
  p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("100p"));
  TrafficControlHelper tch;
  ApplicationContainer sinks;
  for (uint32_t i = 0; i < links; i++) {
    NetDeviceContainer devices = p2p.Install(nodes);
    Ipv4AddressHelper addr;
    std::string base = "10.1." + std::to_string(i + 1) + ".0";
    addr.SetBase(base.c_str(), "255.255.255.0");
    Ipv4InterfaceContainer ifaces = addr.Assign(devices);
    tch.Uninstall(devices);  // Assign added a default queue disc: only the device's 100 packets
    uint16_t port = 9000 + i;
    BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(ifaces.GetAddress(1), port));
    source.SetAttribute("MaxBytes", UintegerValue(bytes / links));
    source.Install(nodes.Get(0)).Start(Seconds(0));
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    sinks.Add(sink.Install(nodes.Get(1)));
  }
  for (uint32_t i = 0; i < sinks.GetN(); i++) {
    sinks.Get(i)->TraceConnectWithoutContext("Rx", MakeCallback(&OnRx));
  }
  sinks.Start(Seconds(0));
  Simulator::Stop(Seconds(600));
  auto start = std::chrono::steady_clock::now();
  Simulator::Run();
  double loopMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("ns-3 links=%u received=%llu bytes fct_s=%.6f events=%llu loop_ms=%.2f\n", links,
              (unsigned long long)g_rx, g_done.GetSeconds(), (unsigned long long)Simulator::GetEventCount(),
              loopMs);
  Simulator::Destroy();
  return g_rx == bytes ? 0 : 1;
}
