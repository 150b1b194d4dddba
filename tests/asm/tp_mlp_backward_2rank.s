# backward program of a 2-rank tensor-parallel MLP (ColwiseParallel 512->2048, RowwiseParallel
# 2048->512, batch 256, fp32) as trnc compiled it: the input gradient's all_reduce starts
# after its matmul and is waited for after the weight-gradient kernels (generated with
# TRNC_DUMP_DIR from the model of tests/python/test_collectives.py at this size)
.version 2
.target trn2
.buffer in0 input f32 524288
.buffer in1 input f32 2097152
.buffer in2 input f32 1048576
.buffer in3 input f32 1048576
.buffer in4 input f32 2097152
.buffer in5 input f32 524288
.buffer out6 output f32 524288
.buffer out7 output f32 2097152
.buffer out8 output f32 4096
.buffer out9 output f32 2097152
.buffer out10 output f32 2048
.buffer t11 internal f32 1048576 0
.buffer t12 internal f32 1048576 1048576
.buffer t13 internal f32 524288 0
.buffer t14 internal f32 524288 524288
.kernel k0_mm 20
dma12 dma_copy dst=sbuf[0:128]@66048:f32[[1,128]] src0=hbm:in5@0:f32[[512,128],[1,128]] mode=direct signal=s16
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@66048:f32[[1,128]] wait=s16>=1 signal=s0
vector tensor_copy dst=sbuf[0:128]@68096:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=1 signal=s1
dma13 dma_copy dst=sbuf[0:128]@66560:f32[[1,128]] src0=hbm:in5@262144:f32[[512,128],[1,128]] mode=direct signal=s17
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@66560:f32[[1,128]] wait=s17>=1 signal=s0
vector tensor_copy dst=sbuf[0:128]@68608:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=2 signal=s1
dma14 dma_copy dst=sbuf[0:128]@67072:f32[[1,128]] src0=hbm:in5@512:f32[[512,128],[1,128]] mode=direct signal=s18
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@67072:f32[[1,128]] wait=s1>=1,s18>=1 signal=s0
vector tensor_copy dst=sbuf[0:128]@69120:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=3 signal=s1
dma15 dma_copy dst=sbuf[0:128]@67584:f32[[1,128]] src0=hbm:in5@262656:f32[[512,128],[1,128]] mode=direct signal=s19
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@67584:f32[[1,128]] wait=s1>=2,s19>=1 signal=s0
vector tensor_copy dst=sbuf[0:128]@69632:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=4 signal=s1
dma0 dma_copy dst=sbuf[0:32]@512:f32[[512,2],[1,512]] src0=hbm:in4@0:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[32:32]@512:f32[[512,2],[1,512]] src0=hbm:in4@131072:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[64:32]@512:f32[[512,2],[1,512]] src0=hbm:in4@262144:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[96:32]@512:f32[[512,2],[1,512]] src0=hbm:in4@393216:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s7
tensor nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@68096:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s1>=2 signal=s0
tensor nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@68608:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s1>=2 signal=s0
tensor nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@69120:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s1>=4 signal=s0
tensor nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@69632:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s1>=4 signal=s0
dma12 dma_copy dst=sbuf[0:128]@66048:f32[[1,128]] src0=hbm:in5@1024:f32[[512,128],[1,128]] mode=direct wait=s0>=1 signal=s16
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@66048:f32[[1,128]] wait=s1>=3,s16>=2 signal=s0
vector tensor_copy dst=sbuf[0:128]@70144:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=13 signal=s1
dma13 dma_copy dst=sbuf[0:128]@66560:f32[[1,128]] src0=hbm:in5@263168:f32[[512,128],[1,128]] mode=direct wait=s0>=2 signal=s17
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@66560:f32[[1,128]] wait=s1>=4,s17>=2 signal=s0
vector tensor_copy dst=sbuf[0:128]@70656:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=14 signal=s1
dma14 dma_copy dst=sbuf[0:128]@67072:f32[[1,128]] src0=hbm:in5@1536:f32[[512,128],[1,128]] mode=direct wait=s0>=3 signal=s18
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@67072:f32[[1,128]] wait=s1>=5,s18>=2 signal=s0
vector tensor_copy dst=sbuf[0:128]@71168:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=15 signal=s1
dma15 dma_copy dst=sbuf[0:128]@67584:f32[[1,128]] src0=hbm:in5@263680:f32[[512,128],[1,128]] mode=direct wait=s0>=4 signal=s19
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@67584:f32[[1,128]] wait=s1>=6,s19>=2 signal=s0
vector tensor_copy dst=sbuf[0:128]@71680:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=16 signal=s1
dma4 dma_copy dst=sbuf[0:32]@4608:f32[[512,2],[1,512]] src0=hbm:in4@1048576:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[32:32]@4608:f32[[512,2],[1,512]] src0=hbm:in4@1179648:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[64:32]@4608:f32[[512,2],[1,512]] src0=hbm:in4@1310720:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[96:32]@4608:f32[[512,2],[1,512]] src0=hbm:in4@1441792:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s11
tensor nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@70144:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=1 wait=s1>=6 signal=s0
tensor nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@70656:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=1 wait=s1>=6 signal=s0
tensor nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@71168:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s1>=8 signal=s0
tensor nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@71680:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s1>=8 signal=s0
scalar activation dst=sbuf[0:128]@49664:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=22 signal=s2
scalar activation dst=sbuf[0:128]@51712:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=24 signal=s2
dma12 dma_copy dst=hbm:t11@0:f32[[1024,32],[131072,2],[1,512]] src0=sbuf[0:32]@49664:f32[[512,2],[1,512]] mode=direct wait=s2>=2 signal=s16
dma13 dma_copy dst=hbm:t11@131072:f32[[1024,32],[131072,2],[1,512]] src0=sbuf[32:32]@49664:f32[[512,2],[1,512]] mode=direct wait=s2>=2 signal=s17
dma14 dma_copy dst=hbm:t11@262144:f32[[1024,32],[131072,2],[1,512]] src0=sbuf[64:32]@49664:f32[[512,2],[1,512]] mode=direct wait=s2>=2 signal=s18
dma15 dma_copy dst=hbm:t11@393216:f32[[1024,32],[131072,2],[1,512]] src0=sbuf[96:32]@49664:f32[[512,2],[1,512]] mode=direct wait=s2>=2 signal=s19
dma8 dma_copy dst=sbuf[0:32]@8704:f32[[512,2],[1,512]] src0=hbm:in4@2048:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s12
dma9 dma_copy dst=sbuf[32:32]@8704:f32[[512,2],[1,512]] src0=hbm:in4@133120:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s13
dma10 dma_copy dst=sbuf[64:32]@8704:f32[[512,2],[1,512]] src0=hbm:in4@264192:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s14
dma11 dma_copy dst=sbuf[96:32]@8704:f32[[512,2],[1,512]] src0=hbm:in4@395264:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s15
tensor nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s0
tensor matmul dst=psum[0:128]@4096:f32[[1,512]] src0=sbuf[0:128]@68096:f32[[1,128]] src1=sbuf[0:128]@8704:f32[[1,512]] acc=0 wait=s1>=2 signal=s0
tensor nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s0
tensor matmul dst=psum[0:128]@6144:f32[[1,512]] src0=sbuf[0:128]@68608:f32[[1,128]] src1=sbuf[0:128]@8704:f32[[1,512]] acc=0 wait=s1>=2 signal=s0
tensor nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s0
tensor matmul dst=psum[0:128]@4096:f32[[1,512]] src0=sbuf[0:128]@69120:f32[[1,128]] src1=sbuf[0:128]@10752:f32[[1,512]] acc=1 wait=s1>=4 signal=s0
tensor nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s0
tensor matmul dst=psum[0:128]@6144:f32[[1,512]] src0=sbuf[0:128]@69632:f32[[1,128]] src1=sbuf[0:128]@10752:f32[[1,512]] acc=1 wait=s1>=4 signal=s0
dma0 dma_copy dst=sbuf[0:32]@12800:f32[[512,2],[1,512]] src0=hbm:in4@1050624:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[32:32]@12800:f32[[512,2],[1,512]] src0=hbm:in4@1181696:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[64:32]@12800:f32[[512,2],[1,512]] src0=hbm:in4@1312768:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[96:32]@12800:f32[[512,2],[1,512]] src0=hbm:in4@1443840:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s7
tensor nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s0
tensor matmul dst=psum[0:128]@4096:f32[[1,512]] src0=sbuf[0:128]@70144:f32[[1,128]] src1=sbuf[0:128]@12800:f32[[1,512]] acc=1 wait=s1>=6 signal=s0
tensor nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s0
tensor matmul dst=psum[0:128]@6144:f32[[1,512]] src0=sbuf[0:128]@70656:f32[[1,128]] src1=sbuf[0:128]@12800:f32[[1,512]] acc=1 wait=s1>=6 signal=s0
tensor nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s0
tensor matmul dst=psum[0:128]@4096:f32[[1,512]] src0=sbuf[0:128]@71168:f32[[1,128]] src1=sbuf[0:128]@14848:f32[[1,512]] acc=1 wait=s1>=8 signal=s0
tensor nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s0
tensor matmul dst=psum[0:128]@6144:f32[[1,512]] src0=sbuf[0:128]@71680:f32[[1,128]] src1=sbuf[0:128]@14848:f32[[1,512]] acc=1 wait=s1>=8 signal=s0
scalar activation dst=sbuf[0:128]@53760:f32[[1,512]] src0=psum[0:128]@4096:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=38 signal=s2
scalar activation dst=sbuf[0:128]@55808:f32[[1,512]] src0=psum[0:128]@6144:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=40 signal=s2
dma4 dma_copy dst=hbm:t11@2048:f32[[1024,32],[1,512]] src0=sbuf[0:32]@53760:f32[[1,512]] mode=direct wait=s2>=4 signal=s8
dma5 dma_copy dst=hbm:t11@133120:f32[[1024,32],[1,512]] src0=sbuf[32:32]@53760:f32[[1,512]] mode=direct wait=s2>=4 signal=s9
dma6 dma_copy dst=hbm:t11@264192:f32[[1024,32],[1,512]] src0=sbuf[64:32]@53760:f32[[1,512]] mode=direct wait=s2>=4 signal=s10
dma7 dma_copy dst=hbm:t11@395264:f32[[1024,32],[1,512]] src0=sbuf[96:32]@53760:f32[[1,512]] mode=direct wait=s2>=4 signal=s11
dma8 dma_copy dst=hbm:t11@526336:f32[[1024,32],[1,512]] src0=sbuf[0:32]@55808:f32[[1,512]] mode=direct wait=s2>=4 signal=s12
dma9 dma_copy dst=hbm:t11@657408:f32[[1024,32],[1,512]] src0=sbuf[32:32]@55808:f32[[1,512]] mode=direct wait=s2>=4 signal=s13
dma10 dma_copy dst=hbm:t11@788480:f32[[1024,32],[1,512]] src0=sbuf[64:32]@55808:f32[[1,512]] mode=direct wait=s2>=4 signal=s14
dma11 dma_copy dst=hbm:t11@919552:f32[[1024,32],[1,512]] src0=sbuf[96:32]@55808:f32[[1,512]] mode=direct wait=s2>=4 signal=s15
.kernel k1_mm 20
dma12 dma_copy dst=sbuf[0:64]@74240:f32[[1,512]] src0=hbm:in5@0:f32[[512,64],[1,512]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[64:64]@74240:f32[[1,512]] src0=hbm:in5@131072:f32[[512,64],[1,512]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[0:64]@76288:f32[[1,512]] src0=hbm:in5@262144:f32[[512,64],[1,512]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[64:64]@76288:f32[[1,512]] src0=hbm:in5@393216:f32[[512,64],[1,512]] mode=direct signal=s19
dma0 dma_copy dst=sbuf[0:32]@512:f32[[512,2],[1,512]] src0=hbm:in3@0:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[32:32]@512:f32[[512,2],[1,512]] src0=hbm:in3@131072:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[64:32]@512:f32[[512,2],[1,512]] src0=hbm:in3@262144:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[96:32]@512:f32[[512,2],[1,512]] src0=hbm:in3@393216:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s7
tensor nop wait=s17>=1,s16>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@74240:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s17>=1,s16>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@74752:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s17>=1,s16>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@4096:f32[[1,512]] src0=sbuf[0:128]@75264:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s17>=1,s16>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@6144:f32[[1,512]] src0=sbuf[0:128]@75776:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@76288:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@76800:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@4096:f32[[1,512]] src0=sbuf[0:128]@77312:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@6144:f32[[1,512]] src0=sbuf[0:128]@77824:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s4>=1,s5>=1 signal=s0
scalar activation dst=sbuf[0:128]@49664:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=10 signal=s2
scalar activation dst=sbuf[0:128]@51712:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=12 signal=s2
scalar activation dst=sbuf[0:128]@53760:f32[[1,512]] src0=psum[0:128]@4096:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=14 signal=s2
scalar activation dst=sbuf[0:128]@55808:f32[[1,512]] src0=psum[0:128]@6144:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=16 signal=s2
dma12 dma_copy dst=hbm:out9@0:f32[[1024,32],[131072,4],[1,512]] src0=sbuf[0:32]@49664:f32[[512,4],[1,512]] mode=direct wait=s2>=4 signal=s16
dma13 dma_copy dst=hbm:out9@131072:f32[[1024,32],[131072,4],[1,512]] src0=sbuf[32:32]@49664:f32[[512,4],[1,512]] mode=direct wait=s2>=4 signal=s17
dma14 dma_copy dst=hbm:out9@262144:f32[[1024,32],[131072,4],[1,512]] src0=sbuf[64:32]@49664:f32[[512,4],[1,512]] mode=direct wait=s2>=4 signal=s18
dma15 dma_copy dst=hbm:out9@393216:f32[[1024,32],[131072,4],[1,512]] src0=sbuf[96:32]@49664:f32[[512,4],[1,512]] mode=direct wait=s2>=4 signal=s19
dma4 dma_copy dst=sbuf[0:32]@4608:f32[[512,2],[1,512]] src0=hbm:in3@2048:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[32:32]@4608:f32[[512,2],[1,512]] src0=hbm:in3@133120:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[64:32]@4608:f32[[512,2],[1,512]] src0=hbm:in3@264192:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[96:32]@4608:f32[[512,2],[1,512]] src0=hbm:in3@395264:f32[[1024,32],[131072,2],[1,512]] mode=direct signal=s11
tensor nop wait=s17>=1,s16>=1,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@8192:f32[[1,512]] src0=sbuf[0:128]@74240:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=0 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s17>=1,s16>=1,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@10240:f32[[1,512]] src0=sbuf[0:128]@74752:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=0 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s17>=1,s16>=1,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@12288:f32[[1,512]] src0=sbuf[0:128]@75264:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=0 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s17>=1,s16>=1,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@14336:f32[[1,512]] src0=sbuf[0:128]@75776:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=0 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@8192:f32[[1,512]] src0=sbuf[0:128]@76288:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@10240:f32[[1,512]] src0=sbuf[0:128]@76800:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@12288:f32[[1,512]] src0=sbuf[0:128]@77312:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@14336:f32[[1,512]] src0=sbuf[0:128]@77824:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s8>=1,s9>=1 signal=s0
scalar activation dst=sbuf[0:128]@57856:f32[[1,512]] src0=psum[0:128]@8192:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=26 signal=s2
scalar activation dst=sbuf[0:128]@59904:f32[[1,512]] src0=psum[0:128]@10240:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=28 signal=s2
scalar activation dst=sbuf[0:128]@61952:f32[[1,512]] src0=psum[0:128]@12288:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=30 signal=s2
scalar activation dst=sbuf[0:128]@64000:f32[[1,512]] src0=psum[0:128]@14336:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=32 signal=s2
dma8 dma_copy dst=hbm:out9@2048:f32[[1024,32],[1,512]] src0=sbuf[0:32]@57856:f32[[1,512]] mode=direct wait=s2>=8 signal=s12
dma9 dma_copy dst=hbm:out9@133120:f32[[1024,32],[1,512]] src0=sbuf[32:32]@57856:f32[[1,512]] mode=direct wait=s2>=8 signal=s13
dma10 dma_copy dst=hbm:out9@264192:f32[[1024,32],[1,512]] src0=sbuf[64:32]@57856:f32[[1,512]] mode=direct wait=s2>=8 signal=s14
dma11 dma_copy dst=hbm:out9@395264:f32[[1024,32],[1,512]] src0=sbuf[96:32]@57856:f32[[1,512]] mode=direct wait=s2>=8 signal=s15
dma0 dma_copy dst=hbm:out9@526336:f32[[1024,32],[1,512]] src0=sbuf[0:32]@59904:f32[[1,512]] mode=direct wait=s2>=8 signal=s4
dma1 dma_copy dst=hbm:out9@657408:f32[[1024,32],[1,512]] src0=sbuf[32:32]@59904:f32[[1,512]] mode=direct wait=s2>=8 signal=s5
dma2 dma_copy dst=hbm:out9@788480:f32[[1024,32],[1,512]] src0=sbuf[64:32]@59904:f32[[1,512]] mode=direct wait=s2>=8 signal=s6
dma3 dma_copy dst=hbm:out9@919552:f32[[1024,32],[1,512]] src0=sbuf[96:32]@59904:f32[[1,512]] mode=direct wait=s2>=8 signal=s7
dma4 dma_copy dst=hbm:out9@1050624:f32[[1024,32],[1,512]] src0=sbuf[0:32]@61952:f32[[1,512]] mode=direct wait=s2>=8 signal=s8
dma5 dma_copy dst=hbm:out9@1181696:f32[[1024,32],[1,512]] src0=sbuf[32:32]@61952:f32[[1,512]] mode=direct wait=s2>=8 signal=s9
dma6 dma_copy dst=hbm:out9@1312768:f32[[1024,32],[1,512]] src0=sbuf[64:32]@61952:f32[[1,512]] mode=direct wait=s2>=8 signal=s10
dma7 dma_copy dst=hbm:out9@1443840:f32[[1024,32],[1,512]] src0=sbuf[96:32]@61952:f32[[1,512]] mode=direct wait=s2>=8 signal=s11
dma8 dma_copy dst=hbm:out9@1574912:f32[[1024,32],[1,512]] src0=sbuf[0:32]@64000:f32[[1,512]] mode=direct wait=s2>=8 signal=s12
dma9 dma_copy dst=hbm:out9@1705984:f32[[1024,32],[1,512]] src0=sbuf[32:32]@64000:f32[[1,512]] mode=direct wait=s2>=8 signal=s13
dma10 dma_copy dst=hbm:out9@1837056:f32[[1024,32],[1,512]] src0=sbuf[64:32]@64000:f32[[1,512]] mode=direct wait=s2>=8 signal=s14
dma11 dma_copy dst=hbm:out9@1968128:f32[[1024,32],[1,512]] src0=sbuf[96:32]@64000:f32[[1,512]] mode=direct wait=s2>=8 signal=s15
.kernel k2_sum 20
gpsimd memset dst=sbuf[0:128]@14336:f32[[1,1]] imm0=1 signal=s3
dma0 dma_copy dst=sbuf[0:16]@0:f32[[1,512]] src0=hbm:in5@0:f32[[512,16],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[16:16]@0:f32[[1,512]] src0=hbm:in5@32768:f32[[512,16],[1,512]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[32:16]@0:f32[[1,512]] src0=hbm:in5@65536:f32[[512,16],[1,512]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[48:16]@0:f32[[1,512]] src0=hbm:in5@98304:f32[[512,16],[1,512]] mode=direct signal=s7
dma4 dma_copy dst=sbuf[64:16]@0:f32[[1,512]] src0=hbm:in5@131072:f32[[512,16],[1,512]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[80:16]@0:f32[[1,512]] src0=hbm:in5@163840:f32[[512,16],[1,512]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[96:16]@0:f32[[1,512]] src0=hbm:in5@196608:f32[[512,16],[1,512]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[112:16]@0:f32[[1,512]] src0=hbm:in5@229376:f32[[512,16],[1,512]] mode=direct signal=s11
tensor nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s0
tensor nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s0
tensor matmul dst=psum[0:1]@0:f32[[1,512]] src0=sbuf[0:128]@14336:f32[[1,1]] src1=sbuf[0:128]@0:f32[[1,512]] acc=0 wait=s3>=1 signal=s0
dma8 dma_copy dst=sbuf[0:16]@2048:f32[[1,512]] src0=hbm:in5@262144:f32[[512,16],[1,512]] mode=direct signal=s12
dma9 dma_copy dst=sbuf[16:16]@2048:f32[[1,512]] src0=hbm:in5@294912:f32[[512,16],[1,512]] mode=direct signal=s13
dma10 dma_copy dst=sbuf[32:16]@2048:f32[[1,512]] src0=hbm:in5@327680:f32[[512,16],[1,512]] mode=direct signal=s14
dma11 dma_copy dst=sbuf[48:16]@2048:f32[[1,512]] src0=hbm:in5@360448:f32[[512,16],[1,512]] mode=direct signal=s15
dma12 dma_copy dst=sbuf[64:16]@2048:f32[[1,512]] src0=hbm:in5@393216:f32[[512,16],[1,512]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[80:16]@2048:f32[[1,512]] src0=hbm:in5@425984:f32[[512,16],[1,512]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[96:16]@2048:f32[[1,512]] src0=hbm:in5@458752:f32[[512,16],[1,512]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[112:16]@2048:f32[[1,512]] src0=hbm:in5@491520:f32[[512,16],[1,512]] mode=direct signal=s19
tensor nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s0
tensor nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s0
tensor matmul dst=psum[0:1]@0:f32[[1,512]] src0=sbuf[0:128]@14336:f32[[1,1]] src1=sbuf[0:128]@2048:f32[[1,512]] acc=1 wait=s3>=1 signal=s0
scalar tensor_copy dst=sbuf[0:1]@6144:f32[[1,512]] src0=psum[0:1]@0:f32[[1,512]] wait=s0>=6 signal=s2
dma0 dma_copy dst=hbm:out10@0:f32[[0,1],[1,512]] src0=sbuf[0:1]@6144:f32[[1,512]] mode=direct wait=s2>=1 signal=s4
.kernel k3_threshold_backward 20
dma1 dma_copy dst=sbuf[0:16]@0:f32[[1,2048]] src0=hbm:t11@0:f32[[2048,16],[1,2048]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[16:16]@0:f32[[1,2048]] src0=hbm:t11@131072:f32[[2048,16],[1,2048]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[32:16]@0:f32[[1,2048]] src0=hbm:t11@262144:f32[[2048,16],[1,2048]] mode=direct signal=s7
dma4 dma_copy dst=sbuf[48:16]@0:f32[[1,2048]] src0=hbm:t11@393216:f32[[2048,16],[1,2048]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[64:16]@0:f32[[1,2048]] src0=hbm:t11@524288:f32[[2048,16],[1,2048]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[80:16]@0:f32[[1,2048]] src0=hbm:t11@655360:f32[[2048,16],[1,2048]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[96:16]@0:f32[[1,2048]] src0=hbm:t11@786432:f32[[2048,16],[1,2048]] mode=direct signal=s11
dma8 dma_copy dst=sbuf[112:16]@0:f32[[1,2048]] src0=hbm:t11@917504:f32[[2048,16],[1,2048]] mode=direct signal=s12
dma9 dma_copy dst=sbuf[0:16]@43008:f32[[1,2048]] src0=hbm:in2@0:f32[[2048,16],[1,2048]] mode=direct signal=s13
dma10 dma_copy dst=sbuf[16:16]@43008:f32[[1,2048]] src0=hbm:in2@131072:f32[[2048,16],[1,2048]] mode=direct signal=s14
dma11 dma_copy dst=sbuf[32:16]@43008:f32[[1,2048]] src0=hbm:in2@262144:f32[[2048,16],[1,2048]] mode=direct signal=s15
dma12 dma_copy dst=sbuf[48:16]@43008:f32[[1,2048]] src0=hbm:in2@393216:f32[[2048,16],[1,2048]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[64:16]@43008:f32[[1,2048]] src0=hbm:in2@524288:f32[[2048,16],[1,2048]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[80:16]@43008:f32[[1,2048]] src0=hbm:in2@655360:f32[[2048,16],[1,2048]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[96:16]@43008:f32[[1,2048]] src0=hbm:in2@786432:f32[[2048,16],[1,2048]] mode=direct signal=s19
dma0 dma_copy dst=sbuf[112:16]@43008:f32[[1,2048]] src0=hbm:in2@917504:f32[[2048,16],[1,2048]] mode=direct signal=s4
vector nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@86016:f32[[1,2048]] src0=sbuf[0:128]@43008:f32[[1,2048]] op=gt op1=bypass imm0=0 imm1=0 wait=s4>=1,s13>=1,s14>=1,s15>=1 signal=s1
vector memset dst=sbuf[0:128]@114688:f32[[1,2048]] imm0=0 signal=s1
vector nop wait=s12>=1,s11>=1,s10>=1,s9>=1 signal=s1
vector select dst=sbuf[0:128]@143360:f32[[1,2048]] src0=sbuf[0:128]@86016:f32[[1,2048]] src1=sbuf[0:128]@0:f32[[1,2048]] src2=sbuf[0:128]@114688:f32[[1,2048]] wait=s5>=1,s6>=1,s7>=1,s8>=1 signal=s1
dma1 dma_copy dst=hbm:t12@0:f32[[2048,16],[1,2048]] src0=sbuf[0:16]@143360:f32[[1,2048]] mode=direct wait=s1>=5 signal=s5
dma2 dma_copy dst=hbm:t12@131072:f32[[2048,16],[1,2048]] src0=sbuf[16:16]@143360:f32[[1,2048]] mode=direct wait=s1>=5 signal=s6
dma3 dma_copy dst=hbm:t12@262144:f32[[2048,16],[1,2048]] src0=sbuf[32:16]@143360:f32[[1,2048]] mode=direct wait=s1>=5 signal=s7
dma4 dma_copy dst=hbm:t12@393216:f32[[2048,16],[1,2048]] src0=sbuf[48:16]@143360:f32[[1,2048]] mode=direct wait=s1>=5 signal=s8
dma5 dma_copy dst=hbm:t12@524288:f32[[2048,16],[1,2048]] src0=sbuf[64:16]@143360:f32[[1,2048]] mode=direct wait=s1>=5 signal=s9
dma6 dma_copy dst=hbm:t12@655360:f32[[2048,16],[1,2048]] src0=sbuf[80:16]@143360:f32[[1,2048]] mode=direct wait=s1>=5 signal=s10
dma7 dma_copy dst=hbm:t12@786432:f32[[2048,16],[1,2048]] src0=sbuf[96:16]@143360:f32[[1,2048]] mode=direct wait=s1>=5 signal=s11
dma8 dma_copy dst=hbm:t12@917504:f32[[2048,16],[1,2048]] src0=sbuf[112:16]@143360:f32[[1,2048]] mode=direct wait=s1>=5 signal=s12
.kernel k4_mm 20
dma12 dma_copy dst=sbuf[0:128]@66048:f32[[1,128]] src0=hbm:t12@0:f32[[1024,128],[1,128]] mode=direct signal=s16
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@66048:f32[[1,128]] wait=s16>=1 signal=s0
vector tensor_copy dst=sbuf[0:128]@68096:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=1 signal=s1
dma13 dma_copy dst=sbuf[0:128]@66560:f32[[1,128]] src0=hbm:t12@524288:f32[[1024,128],[1,128]] mode=direct signal=s17
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@66560:f32[[1,128]] wait=s17>=1 signal=s0
vector tensor_copy dst=sbuf[0:128]@68608:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=2 signal=s1
dma14 dma_copy dst=sbuf[0:128]@67072:f32[[1,128]] src0=hbm:t12@512:f32[[1024,128],[1,128]] mode=direct signal=s18
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@67072:f32[[1,128]] wait=s1>=1,s18>=1 signal=s0
vector tensor_copy dst=sbuf[0:128]@69120:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=3 signal=s1
dma15 dma_copy dst=sbuf[0:128]@67584:f32[[1,128]] src0=hbm:t12@524800:f32[[1024,128],[1,128]] mode=direct signal=s19
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@67584:f32[[1,128]] wait=s1>=2,s19>=1 signal=s0
vector tensor_copy dst=sbuf[0:128]@69632:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=4 signal=s1
dma0 dma_copy dst=sbuf[0:32]@512:f32[[512,2],[1,512]] src0=hbm:in1@0:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[32:32]@512:f32[[512,2],[1,512]] src0=hbm:in1@65536:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[64:32]@512:f32[[512,2],[1,512]] src0=hbm:in1@131072:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[96:32]@512:f32[[512,2],[1,512]] src0=hbm:in1@196608:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s7
tensor nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@68096:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s1>=2 signal=s0
tensor nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@68608:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s1>=2 signal=s0
tensor nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@69120:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s1>=4 signal=s0
tensor nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@69632:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s1>=4 signal=s0
dma12 dma_copy dst=sbuf[0:128]@66048:f32[[1,128]] src0=hbm:t12@1024:f32[[1024,128],[1,128]] mode=direct wait=s0>=1 signal=s16
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@66048:f32[[1,128]] wait=s1>=3,s16>=2 signal=s0
vector tensor_copy dst=sbuf[0:128]@70144:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=13 signal=s1
dma13 dma_copy dst=sbuf[0:128]@66560:f32[[1,128]] src0=hbm:t12@525312:f32[[1024,128],[1,128]] mode=direct wait=s0>=2 signal=s17
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@66560:f32[[1,128]] wait=s1>=4,s17>=2 signal=s0
vector tensor_copy dst=sbuf[0:128]@70656:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=14 signal=s1
dma14 dma_copy dst=sbuf[0:128]@67072:f32[[1,128]] src0=hbm:t12@1536:f32[[1024,128],[1,128]] mode=direct wait=s0>=3 signal=s18
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@67072:f32[[1,128]] wait=s1>=5,s18>=2 signal=s0
vector tensor_copy dst=sbuf[0:128]@71168:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=15 signal=s1
dma15 dma_copy dst=sbuf[0:128]@67584:f32[[1,128]] src0=hbm:t12@525824:f32[[1024,128],[1,128]] mode=direct wait=s0>=4 signal=s19
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@67584:f32[[1,128]] wait=s1>=6,s19>=2 signal=s0
vector tensor_copy dst=sbuf[0:128]@71680:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=16 signal=s1
dma4 dma_copy dst=sbuf[0:32]@4608:f32[[512,2],[1,512]] src0=hbm:in1@524288:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[32:32]@4608:f32[[512,2],[1,512]] src0=hbm:in1@589824:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[64:32]@4608:f32[[512,2],[1,512]] src0=hbm:in1@655360:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[96:32]@4608:f32[[512,2],[1,512]] src0=hbm:in1@720896:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s11
tensor nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@70144:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=1 wait=s1>=6 signal=s0
tensor nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@70656:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=1 wait=s1>=6 signal=s0
tensor nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@71168:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s1>=8 signal=s0
tensor nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@71680:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s1>=8 signal=s0
dma12 dma_copy dst=sbuf[0:128]@66048:f32[[1,128]] src0=hbm:t12@2048:f32[[1024,128],[1,128]] mode=direct wait=s0>=13 signal=s16
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@66048:f32[[1,128]] wait=s1>=7,s16>=3 signal=s0
vector tensor_copy dst=sbuf[0:128]@72192:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=25 signal=s1
dma13 dma_copy dst=sbuf[0:128]@66560:f32[[1,128]] src0=hbm:t12@526336:f32[[1024,128],[1,128]] mode=direct wait=s0>=14 signal=s17
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@66560:f32[[1,128]] wait=s1>=8,s17>=3 signal=s0
vector tensor_copy dst=sbuf[0:128]@72704:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=26 signal=s1
dma14 dma_copy dst=sbuf[0:128]@67072:f32[[1,128]] src0=hbm:t12@2560:f32[[1024,128],[1,128]] mode=direct wait=s0>=15 signal=s18
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@67072:f32[[1,128]] wait=s1>=9,s18>=3 signal=s0
vector tensor_copy dst=sbuf[0:128]@73216:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=27 signal=s1
dma15 dma_copy dst=sbuf[0:128]@67584:f32[[1,128]] src0=hbm:t12@526848:f32[[1024,128],[1,128]] mode=direct wait=s0>=16 signal=s19
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@67584:f32[[1,128]] wait=s1>=10,s19>=3 signal=s0
vector tensor_copy dst=sbuf[0:128]@73728:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=28 signal=s1
dma8 dma_copy dst=sbuf[0:32]@8704:f32[[512,2],[1,512]] src0=hbm:in1@1048576:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s12
dma9 dma_copy dst=sbuf[32:32]@8704:f32[[512,2],[1,512]] src0=hbm:in1@1114112:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s13
dma10 dma_copy dst=sbuf[64:32]@8704:f32[[512,2],[1,512]] src0=hbm:in1@1179648:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s14
dma11 dma_copy dst=sbuf[96:32]@8704:f32[[512,2],[1,512]] src0=hbm:in1@1245184:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s15
tensor nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@72192:f32[[1,128]] src1=sbuf[0:128]@8704:f32[[1,512]] acc=1 wait=s1>=10 signal=s0
tensor nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@72704:f32[[1,128]] src1=sbuf[0:128]@8704:f32[[1,512]] acc=1 wait=s1>=10 signal=s0
tensor nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@73216:f32[[1,128]] src1=sbuf[0:128]@10752:f32[[1,512]] acc=1 wait=s1>=12 signal=s0
tensor nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@73728:f32[[1,128]] src1=sbuf[0:128]@10752:f32[[1,512]] acc=1 wait=s1>=12 signal=s0
dma12 dma_copy dst=sbuf[0:128]@66048:f32[[1,128]] src0=hbm:t12@3072:f32[[1024,128],[1,128]] mode=direct wait=s0>=25 signal=s16
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@66048:f32[[1,128]] wait=s1>=11,s16>=4 signal=s0
vector tensor_copy dst=sbuf[0:128]@74240:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=37 signal=s1
dma13 dma_copy dst=sbuf[0:128]@66560:f32[[1,128]] src0=hbm:t12@527360:f32[[1024,128],[1,128]] mode=direct wait=s0>=26 signal=s17
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@66560:f32[[1,128]] wait=s1>=12,s17>=4 signal=s0
vector tensor_copy dst=sbuf[0:128]@74752:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=38 signal=s1
dma14 dma_copy dst=sbuf[0:128]@67072:f32[[1,128]] src0=hbm:t12@3584:f32[[1024,128],[1,128]] mode=direct wait=s0>=27 signal=s18
tensor transpose dst=psum[0:128]@8192:f32[[1,128]] src0=sbuf[0:128]@67072:f32[[1,128]] wait=s1>=13,s18>=4 signal=s0
vector tensor_copy dst=sbuf[0:128]@75264:f32[[1,128]] src0=psum[0:128]@8192:f32[[1,128]] wait=s0>=39 signal=s1
dma15 dma_copy dst=sbuf[0:128]@67584:f32[[1,128]] src0=hbm:t12@527872:f32[[1024,128],[1,128]] mode=direct wait=s0>=28 signal=s19
tensor transpose dst=psum[0:128]@8704:f32[[1,128]] src0=sbuf[0:128]@67584:f32[[1,128]] wait=s1>=14,s19>=4 signal=s0
vector tensor_copy dst=sbuf[0:128]@75776:f32[[1,128]] src0=psum[0:128]@8704:f32[[1,128]] wait=s0>=40 signal=s1
dma0 dma_copy dst=sbuf[0:32]@12800:f32[[512,2],[1,512]] src0=hbm:in1@1572864:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[32:32]@12800:f32[[512,2],[1,512]] src0=hbm:in1@1638400:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[64:32]@12800:f32[[512,2],[1,512]] src0=hbm:in1@1703936:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[96:32]@12800:f32[[512,2],[1,512]] src0=hbm:in1@1769472:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s7
tensor nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@74240:f32[[1,128]] src1=sbuf[0:128]@12800:f32[[1,512]] acc=1 wait=s1>=14 signal=s0
tensor nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@74752:f32[[1,128]] src1=sbuf[0:128]@12800:f32[[1,512]] acc=1 wait=s1>=14 signal=s0
tensor nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@75264:f32[[1,128]] src1=sbuf[0:128]@14848:f32[[1,512]] acc=1 wait=s1>=16 signal=s0
tensor nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@75776:f32[[1,128]] src1=sbuf[0:128]@14848:f32[[1,512]] acc=1 wait=s1>=16 signal=s0
scalar activation dst=sbuf[0:128]@49664:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=46 signal=s2
scalar activation dst=sbuf[0:128]@51712:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=48 signal=s2
dma4 dma_copy dst=hbm:t13@0:f32[[512,32],[1,512]] src0=sbuf[0:32]@49664:f32[[1,512]] mode=direct wait=s2>=2 signal=s8
dma5 dma_copy dst=hbm:t13@65536:f32[[512,32],[1,512]] src0=sbuf[32:32]@49664:f32[[1,512]] mode=direct wait=s2>=2 signal=s9
dma6 dma_copy dst=hbm:t13@131072:f32[[512,32],[1,512]] src0=sbuf[64:32]@49664:f32[[1,512]] mode=direct wait=s2>=2 signal=s10
dma7 dma_copy dst=hbm:t13@196608:f32[[512,32],[1,512]] src0=sbuf[96:32]@49664:f32[[1,512]] mode=direct wait=s2>=2 signal=s11
dma8 dma_copy dst=hbm:t13@262144:f32[[512,32],[1,512]] src0=sbuf[0:32]@51712:f32[[1,512]] mode=direct wait=s2>=2 signal=s12
dma9 dma_copy dst=hbm:t13@327680:f32[[512,32],[1,512]] src0=sbuf[32:32]@51712:f32[[1,512]] mode=direct wait=s2>=2 signal=s13
dma10 dma_copy dst=hbm:t13@393216:f32[[512,32],[1,512]] src0=sbuf[64:32]@51712:f32[[1,512]] mode=direct wait=s2>=2 signal=s14
dma11 dma_copy dst=hbm:t13@458752:f32[[512,32],[1,512]] src0=sbuf[96:32]@51712:f32[[1,512]] mode=direct wait=s2>=2 signal=s15
.collective all_reduce handle=27 group=0 size=2 dtype=f32 reduce=sum src=hbm:t13@0+524288 dst=hbm:t14@0+524288
.kernel k6_mm 20
dma12 dma_copy dst=sbuf[0:64]@74240:f32[[1,512]] src0=hbm:t12@0:f32[[1024,64],[1,512]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[64:64]@74240:f32[[1,512]] src0=hbm:t12@262144:f32[[1024,64],[1,512]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[0:64]@76288:f32[[1,512]] src0=hbm:t12@524288:f32[[1024,64],[1,512]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[64:64]@76288:f32[[1,512]] src0=hbm:t12@786432:f32[[1024,64],[1,512]] mode=direct signal=s19
dma0 dma_copy dst=sbuf[0:32]@512:f32[[512,2],[1,512]] src0=hbm:in0@0:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[32:32]@512:f32[[512,2],[1,512]] src0=hbm:in0@65536:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[64:32]@512:f32[[512,2],[1,512]] src0=hbm:in0@131072:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[96:32]@512:f32[[512,2],[1,512]] src0=hbm:in0@196608:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s7
dma12 dma_copy dst=sbuf[0:64]@78336:f32[[1,512]] src0=hbm:t12@2048:f32[[1024,64],[1,512]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[64:64]@78336:f32[[1,512]] src0=hbm:t12@264192:f32[[1024,64],[1,512]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[0:64]@80384:f32[[1,512]] src0=hbm:t12@526336:f32[[1024,64],[1,512]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[64:64]@80384:f32[[1,512]] src0=hbm:t12@788480:f32[[1024,64],[1,512]] mode=direct signal=s19
tensor nop wait=s17>=1,s16>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@74240:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s17>=1,s16>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@74752:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s17>=1,s16>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@4096:f32[[1,512]] src0=sbuf[0:128]@75264:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s17>=1,s16>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@6144:f32[[1,512]] src0=sbuf[0:128]@75776:f32[[1,128]] src1=sbuf[0:128]@512:f32[[1,512]] acc=0 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@76288:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@76800:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@4096:f32[[1,512]] src0=sbuf[0:128]@77312:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s4>=1,s5>=1 signal=s0
tensor nop wait=s19>=1,s18>=1,s7>=1,s6>=1 signal=s0
tensor matmul dst=psum[0:128]@6144:f32[[1,512]] src0=sbuf[0:128]@77824:f32[[1,128]] src1=sbuf[0:128]@2560:f32[[1,512]] acc=1 wait=s4>=1,s5>=1 signal=s0
scalar activation dst=sbuf[0:128]@49664:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=10 signal=s2
scalar activation dst=sbuf[0:128]@51712:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=12 signal=s2
scalar activation dst=sbuf[0:128]@53760:f32[[1,512]] src0=psum[0:128]@4096:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=14 signal=s2
scalar activation dst=sbuf[0:128]@55808:f32[[1,512]] src0=psum[0:128]@6144:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=16 signal=s2
dma12 dma_copy dst=hbm:out7@0:f32[[512,32],[65536,4],[1,512]] src0=sbuf[0:32]@49664:f32[[512,4],[1,512]] mode=direct wait=s2>=4 signal=s16
dma13 dma_copy dst=hbm:out7@65536:f32[[512,32],[65536,4],[1,512]] src0=sbuf[32:32]@49664:f32[[512,4],[1,512]] mode=direct wait=s2>=4 signal=s17
dma14 dma_copy dst=hbm:out7@131072:f32[[512,32],[65536,4],[1,512]] src0=sbuf[64:32]@49664:f32[[512,4],[1,512]] mode=direct wait=s2>=4 signal=s18
dma15 dma_copy dst=hbm:out7@196608:f32[[512,32],[65536,4],[1,512]] src0=sbuf[96:32]@49664:f32[[512,4],[1,512]] mode=direct wait=s2>=4 signal=s19
dma4 dma_copy dst=sbuf[0:32]@4608:f32[[512,2],[1,512]] src0=hbm:in0@0:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[32:32]@4608:f32[[512,2],[1,512]] src0=hbm:in0@65536:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[64:32]@4608:f32[[512,2],[1,512]] src0=hbm:in0@131072:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[96:32]@4608:f32[[512,2],[1,512]] src0=hbm:in0@196608:f32[[512,32],[65536,2],[1,512]] mode=direct signal=s11
tensor nop wait=s17>=2,s16>=2,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@8192:f32[[1,512]] src0=sbuf[0:128]@78336:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=0 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s17>=2,s16>=2,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@10240:f32[[1,512]] src0=sbuf[0:128]@78848:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=0 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s17>=2,s16>=2,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@12288:f32[[1,512]] src0=sbuf[0:128]@79360:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=0 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s17>=2,s16>=2,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@14336:f32[[1,512]] src0=sbuf[0:128]@79872:f32[[1,128]] src1=sbuf[0:128]@4608:f32[[1,512]] acc=0 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s19>=2,s18>=2,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@8192:f32[[1,512]] src0=sbuf[0:128]@80384:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s19>=2,s18>=2,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@10240:f32[[1,512]] src0=sbuf[0:128]@80896:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s19>=2,s18>=2,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@12288:f32[[1,512]] src0=sbuf[0:128]@81408:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s8>=1,s9>=1 signal=s0
tensor nop wait=s19>=2,s18>=2,s11>=1,s10>=1 signal=s0
tensor matmul dst=psum[0:128]@14336:f32[[1,512]] src0=sbuf[0:128]@81920:f32[[1,128]] src1=sbuf[0:128]@6656:f32[[1,512]] acc=1 wait=s8>=1,s9>=1 signal=s0
scalar activation dst=sbuf[0:128]@57856:f32[[1,512]] src0=psum[0:128]@8192:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=26 signal=s2
scalar activation dst=sbuf[0:128]@59904:f32[[1,512]] src0=psum[0:128]@10240:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=28 signal=s2
scalar activation dst=sbuf[0:128]@61952:f32[[1,512]] src0=psum[0:128]@12288:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=30 signal=s2
scalar activation dst=sbuf[0:128]@64000:f32[[1,512]] src0=psum[0:128]@14336:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=32 signal=s2
dma8 dma_copy dst=hbm:out7@1048576:f32[[512,32],[1,512]] src0=sbuf[0:32]@57856:f32[[1,512]] mode=direct wait=s2>=8 signal=s12
dma9 dma_copy dst=hbm:out7@1114112:f32[[512,32],[1,512]] src0=sbuf[32:32]@57856:f32[[1,512]] mode=direct wait=s2>=8 signal=s13
dma10 dma_copy dst=hbm:out7@1179648:f32[[512,32],[1,512]] src0=sbuf[64:32]@57856:f32[[1,512]] mode=direct wait=s2>=8 signal=s14
dma11 dma_copy dst=hbm:out7@1245184:f32[[512,32],[1,512]] src0=sbuf[96:32]@57856:f32[[1,512]] mode=direct wait=s2>=8 signal=s15
dma0 dma_copy dst=hbm:out7@1310720:f32[[512,32],[1,512]] src0=sbuf[0:32]@59904:f32[[1,512]] mode=direct wait=s2>=8 signal=s4
dma1 dma_copy dst=hbm:out7@1376256:f32[[512,32],[1,512]] src0=sbuf[32:32]@59904:f32[[1,512]] mode=direct wait=s2>=8 signal=s5
dma2 dma_copy dst=hbm:out7@1441792:f32[[512,32],[1,512]] src0=sbuf[64:32]@59904:f32[[1,512]] mode=direct wait=s2>=8 signal=s6
dma3 dma_copy dst=hbm:out7@1507328:f32[[512,32],[1,512]] src0=sbuf[96:32]@59904:f32[[1,512]] mode=direct wait=s2>=8 signal=s7
dma4 dma_copy dst=hbm:out7@1572864:f32[[512,32],[1,512]] src0=sbuf[0:32]@61952:f32[[1,512]] mode=direct wait=s2>=8 signal=s8
dma5 dma_copy dst=hbm:out7@1638400:f32[[512,32],[1,512]] src0=sbuf[32:32]@61952:f32[[1,512]] mode=direct wait=s2>=8 signal=s9
dma6 dma_copy dst=hbm:out7@1703936:f32[[512,32],[1,512]] src0=sbuf[64:32]@61952:f32[[1,512]] mode=direct wait=s2>=8 signal=s10
dma7 dma_copy dst=hbm:out7@1769472:f32[[512,32],[1,512]] src0=sbuf[96:32]@61952:f32[[1,512]] mode=direct wait=s2>=8 signal=s11
dma8 dma_copy dst=hbm:out7@1835008:f32[[512,32],[1,512]] src0=sbuf[0:32]@64000:f32[[1,512]] mode=direct wait=s2>=8 signal=s12
dma9 dma_copy dst=hbm:out7@1900544:f32[[512,32],[1,512]] src0=sbuf[32:32]@64000:f32[[1,512]] mode=direct wait=s2>=8 signal=s13
dma10 dma_copy dst=hbm:out7@1966080:f32[[512,32],[1,512]] src0=sbuf[64:32]@64000:f32[[1,512]] mode=direct wait=s2>=8 signal=s14
dma11 dma_copy dst=hbm:out7@2031616:f32[[512,32],[1,512]] src0=sbuf[96:32]@64000:f32[[1,512]] mode=direct wait=s2>=8 signal=s15
.kernel k7_sum 20
gpsimd memset dst=sbuf[0:128]@14336:f32[[1,1]] imm0=1 signal=s3
dma9 dma_copy dst=sbuf[0:16]@0:f32[[1,512]] src0=hbm:t12@0:f32[[1024,16],[1,512]] mode=direct signal=s13
dma10 dma_copy dst=sbuf[16:16]@0:f32[[1,512]] src0=hbm:t12@65536:f32[[1024,16],[1,512]] mode=direct signal=s14
dma11 dma_copy dst=sbuf[32:16]@0:f32[[1,512]] src0=hbm:t12@131072:f32[[1024,16],[1,512]] mode=direct signal=s15
dma12 dma_copy dst=sbuf[48:16]@0:f32[[1,512]] src0=hbm:t12@196608:f32[[1024,16],[1,512]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[64:16]@0:f32[[1,512]] src0=hbm:t12@262144:f32[[1024,16],[1,512]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[80:16]@0:f32[[1,512]] src0=hbm:t12@327680:f32[[1024,16],[1,512]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[96:16]@0:f32[[1,512]] src0=hbm:t12@393216:f32[[1024,16],[1,512]] mode=direct signal=s19
dma0 dma_copy dst=sbuf[112:16]@0:f32[[1,512]] src0=hbm:t12@458752:f32[[1024,16],[1,512]] mode=direct signal=s4
tensor nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s0
tensor nop wait=s15>=1,s14>=1,s13>=1,s4>=1 signal=s0
tensor matmul dst=psum[0:1]@0:f32[[1,512]] src0=sbuf[0:128]@14336:f32[[1,1]] src1=sbuf[0:128]@0:f32[[1,512]] acc=0 wait=s3>=1 signal=s0
dma1 dma_copy dst=sbuf[0:16]@2048:f32[[1,512]] src0=hbm:t12@524288:f32[[1024,16],[1,512]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[16:16]@2048:f32[[1,512]] src0=hbm:t12@589824:f32[[1024,16],[1,512]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[32:16]@2048:f32[[1,512]] src0=hbm:t12@655360:f32[[1024,16],[1,512]] mode=direct signal=s7
dma4 dma_copy dst=sbuf[48:16]@2048:f32[[1,512]] src0=hbm:t12@720896:f32[[1024,16],[1,512]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[64:16]@2048:f32[[1,512]] src0=hbm:t12@786432:f32[[1024,16],[1,512]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[80:16]@2048:f32[[1,512]] src0=hbm:t12@851968:f32[[1024,16],[1,512]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[96:16]@2048:f32[[1,512]] src0=hbm:t12@917504:f32[[1024,16],[1,512]] mode=direct signal=s11
dma8 dma_copy dst=sbuf[112:16]@2048:f32[[1,512]] src0=hbm:t12@983040:f32[[1024,16],[1,512]] mode=direct signal=s12
tensor nop wait=s12>=1,s11>=1,s10>=1,s9>=1 signal=s0
tensor nop wait=s8>=1,s7>=1,s6>=1,s5>=1 signal=s0
tensor matmul dst=psum[0:1]@0:f32[[1,512]] src0=sbuf[0:128]@14336:f32[[1,1]] src1=sbuf[0:128]@2048:f32[[1,512]] acc=1 wait=s3>=1 signal=s0
scalar tensor_copy dst=sbuf[0:1]@6144:f32[[1,512]] src0=psum[0:1]@0:f32[[1,512]] wait=s0>=6 signal=s2
dma9 dma_copy dst=hbm:out8@0:f32[[0,1],[1,512]] src0=sbuf[0:1]@6144:f32[[1,512]] mode=direct wait=s2>=1 signal=s13
dma10 dma_copy dst=sbuf[0:16]@4096:f32[[1,512]] src0=hbm:t12@2048:f32[[1024,16],[1,512]] mode=direct signal=s14
dma11 dma_copy dst=sbuf[16:16]@4096:f32[[1,512]] src0=hbm:t12@67584:f32[[1024,16],[1,512]] mode=direct signal=s15
dma12 dma_copy dst=sbuf[32:16]@4096:f32[[1,512]] src0=hbm:t12@133120:f32[[1024,16],[1,512]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[48:16]@4096:f32[[1,512]] src0=hbm:t12@198656:f32[[1024,16],[1,512]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[64:16]@4096:f32[[1,512]] src0=hbm:t12@264192:f32[[1024,16],[1,512]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[80:16]@4096:f32[[1,512]] src0=hbm:t12@329728:f32[[1024,16],[1,512]] mode=direct signal=s19
dma0 dma_copy dst=sbuf[96:16]@4096:f32[[1,512]] src0=hbm:t12@395264:f32[[1024,16],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[112:16]@4096:f32[[1,512]] src0=hbm:t12@460800:f32[[1024,16],[1,512]] mode=direct signal=s5
tensor nop wait=s19>=2,s18>=2,s17>=2,s16>=2 signal=s0
tensor nop wait=s15>=2,s14>=2,s5>=2,s4>=2 signal=s0
tensor matmul dst=psum[0:1]@2048:f32[[1,512]] src0=sbuf[0:128]@14336:f32[[1,1]] src1=sbuf[0:128]@4096:f32[[1,512]] acc=0 wait=s3>=1 signal=s0
dma2 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s6
dma2 nop wait=s15>=1,s14>=1,s13>=1,s4>=1 signal=s6
dma2 dma_copy dst=sbuf[0:16]@0:f32[[1,512]] src0=hbm:t12@526336:f32[[1024,16],[1,512]] mode=direct wait=s0>=3 signal=s6
dma3 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s7
dma3 nop wait=s15>=1,s14>=1,s13>=1,s4>=1 signal=s7
dma3 dma_copy dst=sbuf[16:16]@0:f32[[1,512]] src0=hbm:t12@591872:f32[[1024,16],[1,512]] mode=direct wait=s0>=3 signal=s7
dma4 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s8
dma4 nop wait=s15>=1,s14>=1,s13>=1,s4>=1 signal=s8
dma4 dma_copy dst=sbuf[32:16]@0:f32[[1,512]] src0=hbm:t12@657408:f32[[1024,16],[1,512]] mode=direct wait=s0>=3 signal=s8
dma5 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s9
dma5 nop wait=s15>=1,s14>=1,s13>=1,s4>=1 signal=s9
dma5 dma_copy dst=sbuf[48:16]@0:f32[[1,512]] src0=hbm:t12@722944:f32[[1024,16],[1,512]] mode=direct wait=s0>=3 signal=s9
dma6 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s10
dma6 nop wait=s15>=1,s14>=1,s13>=1,s4>=1 signal=s10
dma6 dma_copy dst=sbuf[64:16]@0:f32[[1,512]] src0=hbm:t12@788480:f32[[1024,16],[1,512]] mode=direct wait=s0>=3 signal=s10
dma7 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s11
dma7 nop wait=s15>=1,s14>=1,s13>=1,s4>=1 signal=s11
dma7 dma_copy dst=sbuf[80:16]@0:f32[[1,512]] src0=hbm:t12@854016:f32[[1024,16],[1,512]] mode=direct wait=s0>=3 signal=s11
dma8 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s12
dma8 nop wait=s15>=1,s14>=1,s13>=1,s4>=1 signal=s12
dma8 dma_copy dst=sbuf[96:16]@0:f32[[1,512]] src0=hbm:t12@919552:f32[[1024,16],[1,512]] mode=direct wait=s0>=3 signal=s12
dma9 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s13
dma9 dma_copy dst=sbuf[112:16]@0:f32[[1,512]] src0=hbm:t12@985088:f32[[1024,16],[1,512]] mode=direct wait=s0>=3,s4>=1,s14>=1,s15>=1 signal=s13
tensor nop wait=s13>=4,s12>=4,s11>=4,s10>=4 signal=s0
tensor nop wait=s9>=4,s8>=4,s7>=4,s6>=4 signal=s0
tensor matmul dst=psum[0:1]@2048:f32[[1,512]] src0=sbuf[0:128]@14336:f32[[1,1]] src1=sbuf[0:128]@0:f32[[1,512]] acc=1 wait=s3>=1 signal=s0
scalar tensor_copy dst=sbuf[0:1]@8192:f32[[1,512]] src0=psum[0:1]@2048:f32[[1,512]] wait=s0>=12 signal=s2
dma10 dma_copy dst=hbm:out8@2048:f32[[0,1],[1,512]] src0=sbuf[0:1]@8192:f32[[1,512]] mode=direct wait=s2>=2 signal=s14
.collective cc_wait handle=27
.kernel k9_output_copy 20
dma11 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t14@0:f32[[0,1],[1,8192]] mode=direct signal=s15
dma12 dma_copy dst=hbm:out6@0:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s15>=1 signal=s16
dma13 dma_copy dst=sbuf[0:1]@32768:f32[[1,8192]] src0=hbm:t14@32768:f32[[0,1],[1,8192]] mode=direct signal=s17
dma14 dma_copy dst=hbm:out6@32768:f32[[0,1],[1,8192]] src0=sbuf[0:1]@32768:f32[[1,8192]] mode=direct wait=s17>=1 signal=s18
dma15 dma_copy dst=sbuf[0:1]@65536:f32[[1,8192]] src0=hbm:t14@65536:f32[[0,1],[1,8192]] mode=direct signal=s19
dma0 dma_copy dst=hbm:out6@65536:f32[[0,1],[1,8192]] src0=sbuf[0:1]@65536:f32[[1,8192]] mode=direct wait=s19>=1 signal=s4
dma1 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t14@98304:f32[[0,1],[1,8192]] mode=direct wait=s15>=1,s16>=1 signal=s5
dma2 dma_copy dst=hbm:out6@98304:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s5>=1 signal=s6
dma3 dma_copy dst=sbuf[0:1]@32768:f32[[1,8192]] src0=hbm:t14@131072:f32[[0,1],[1,8192]] mode=direct wait=s17>=1,s18>=1 signal=s7
dma4 dma_copy dst=hbm:out6@131072:f32[[0,1],[1,8192]] src0=sbuf[0:1]@32768:f32[[1,8192]] mode=direct wait=s7>=1 signal=s8
dma5 dma_copy dst=sbuf[0:1]@65536:f32[[1,8192]] src0=hbm:t14@163840:f32[[0,1],[1,8192]] mode=direct wait=s4>=1,s19>=1 signal=s9
dma6 dma_copy dst=hbm:out6@163840:f32[[0,1],[1,8192]] src0=sbuf[0:1]@65536:f32[[1,8192]] mode=direct wait=s9>=1 signal=s10
dma7 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t14@196608:f32[[0,1],[1,8192]] mode=direct wait=s5>=1,s6>=1 signal=s11
dma8 dma_copy dst=hbm:out6@196608:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s11>=1 signal=s12
dma9 dma_copy dst=sbuf[0:1]@32768:f32[[1,8192]] src0=hbm:t14@229376:f32[[0,1],[1,8192]] mode=direct wait=s7>=1,s8>=1 signal=s13
dma10 dma_copy dst=hbm:out6@229376:f32[[0,1],[1,8192]] src0=sbuf[0:1]@32768:f32[[1,8192]] mode=direct wait=s13>=1 signal=s14
dma11 dma_copy dst=sbuf[0:1]@65536:f32[[1,8192]] src0=hbm:t14@262144:f32[[0,1],[1,8192]] mode=direct wait=s9>=1,s10>=1 signal=s15
dma12 dma_copy dst=hbm:out6@262144:f32[[0,1],[1,8192]] src0=sbuf[0:1]@65536:f32[[1,8192]] mode=direct wait=s15>=2 signal=s16
dma13 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t14@294912:f32[[0,1],[1,8192]] mode=direct wait=s11>=1,s12>=1 signal=s17
dma14 dma_copy dst=hbm:out6@294912:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s17>=2 signal=s18
dma15 dma_copy dst=sbuf[0:1]@32768:f32[[1,8192]] src0=hbm:t14@327680:f32[[0,1],[1,8192]] mode=direct wait=s13>=1,s14>=1 signal=s19
dma0 dma_copy dst=hbm:out6@327680:f32[[0,1],[1,8192]] src0=sbuf[0:1]@32768:f32[[1,8192]] mode=direct wait=s19>=2 signal=s4
dma1 dma_copy dst=sbuf[0:1]@65536:f32[[1,8192]] src0=hbm:t14@360448:f32[[0,1],[1,8192]] mode=direct wait=s15>=2,s16>=2 signal=s5
dma2 dma_copy dst=hbm:out6@360448:f32[[0,1],[1,8192]] src0=sbuf[0:1]@65536:f32[[1,8192]] mode=direct wait=s5>=2 signal=s6
dma3 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t14@393216:f32[[0,1],[1,8192]] mode=direct wait=s17>=2,s18>=2 signal=s7
dma4 dma_copy dst=hbm:out6@393216:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s7>=2 signal=s8
dma5 dma_copy dst=sbuf[0:1]@32768:f32[[1,8192]] src0=hbm:t14@425984:f32[[0,1],[1,8192]] mode=direct wait=s4>=2,s19>=2 signal=s9
dma6 dma_copy dst=hbm:out6@425984:f32[[0,1],[1,8192]] src0=sbuf[0:1]@32768:f32[[1,8192]] mode=direct wait=s9>=2 signal=s10
dma7 dma_copy dst=sbuf[0:1]@65536:f32[[1,8192]] src0=hbm:t14@458752:f32[[0,1],[1,8192]] mode=direct wait=s5>=2,s6>=2 signal=s11
dma8 dma_copy dst=hbm:out6@458752:f32[[0,1],[1,8192]] src0=sbuf[0:1]@65536:f32[[1,8192]] mode=direct wait=s11>=2 signal=s12
dma9 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t14@491520:f32[[0,1],[1,8192]] mode=direct wait=s7>=2,s8>=2 signal=s13
dma10 dma_copy dst=hbm:out6@491520:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s13>=2 signal=s14
