// placeholder netlist of the example design
module AAA (clk, rst_n, d, q);
  input clk, rst_n, d;
  output q;
  DFFRX1 reg_q (.CK(clk), .RN(rst_n), .D(d), .Q(q));
endmodule
