// The ns-3 reference of issue 14's loss-regime table: one TCP bulk transfer
// over one 10 Mbit/s, 20 ms point-to-point link (40 ms RTT) with a
// 100-packet drop-tail queue (no queue disc) and Bernoulli packet loss on
// the data direction only, as the simulator's `sim lossregime` sets up.
// --tcp picks TcpNewReno (window growth per ACK) or TcpLinuxReno (per
// segment acknowledged); --delack is ns-3's DelAckCount (2, its default,
// ACKs every second segment; 1 every segment). Prints the completion time
// (last byte received) in seconds. bench/ns3/lossregime.sh runs the grid.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>

using namespace ns3;

static uint64_t g_bytes = 0;
static uint64_t g_rx = 0;
static double g_done = -1;

static void OnRx(Ptr<const Packet> p, const Address&) {
  g_rx += p->GetSize();
  if (g_done < 0 && g_rx >= g_bytes) {
    g_done = Simulator::Now().GetSeconds();
    Simulator::Stop();
  }
}

int main(int argc, char* argv[]) {
  uint64_t bytes = 10000000;
  double loss = 0.01;
  uint32_t delack = 2;
  uint32_t run = 1;
  std::string tcp = "TcpNewReno";
  CommandLine cmd;
  cmd.AddValue("bytes", "bytes to transfer", bytes);
  cmd.AddValue("loss", "packet loss probability on the data direction", loss);
  cmd.AddValue("delack", "DelAckCount: segments per ACK", delack);
  cmd.AddValue("tcp", "TcpNewReno or TcpLinuxReno", tcp);
  cmd.AddValue("run", "RngRun (the seed)", run);
  cmd.Parse(argc, argv);
  g_bytes = bytes;
  RngSeedManager::SetSeed(1);
  RngSeedManager::SetRun(run);

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::" + tcp));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delack));
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
  NetDeviceContainer devices = p2p.Install(nodes);
  TrafficControlHelper tch;
  Ipv4AddressHelper addr;
  addr.SetBase("10.1.1.0", "255.255.255.0");
  Ipv4InterfaceContainer ifaces = addr.Assign(devices);
  tch.Uninstall(devices);
  if (loss > 0) {
    Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
    em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
    em->SetAttribute("ErrorRate", DoubleValue(loss));
    devices.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));
  }
  BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(ifaces.GetAddress(1), 9000));
  source.SetAttribute("MaxBytes", UintegerValue(bytes));
  source.Install(nodes.Get(0)).Start(Seconds(0));
  PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 9000));
  ApplicationContainer sinks = sink.Install(nodes.Get(1));
  sinks.Start(Seconds(0));
  sinks.Get(0)->TraceConnectWithoutContext("Rx", MakeCallback(&OnRx));
  Simulator::Stop(Seconds(3600));
  Simulator::Run();
  Simulator::Destroy();
  if (g_done < 0) {
    std::fprintf(stderr, "transfer did not complete\n");
    return 1;
  }
  std::printf("%.6f\n", g_done);
  return 0;
}
