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
.buffer t12 internal f32 2048 1048576
.buffer t13 internal f32 1048576 1050624
.buffer t14 internal f32 524288 0
.buffer t15 internal f32 524288 524288
.buffer t16 internal f32 4096 0
.kernel k0_mm 20
dma0 dma_copy dst=sbuf[0:32]@17408:f32[[1,128]] src0=hbm:in5@0:f32[[512,128],[1,32]] mode=transpose signal=s4
dma1 dma_copy dst=sbuf[32:32]@17408:f32[[1,128]] src0=hbm:in5@128:f32[[512,128],[1,32]] mode=transpose signal=s5
dma2 dma_copy dst=sbuf[64:32]@17408:f32[[1,128]] src0=hbm:in5@256:f32[[512,128],[1,32]] mode=transpose signal=s6
dma3 dma_copy dst=sbuf[96:32]@17408:f32[[1,128]] src0=hbm:in5@384:f32[[512,128],[1,32]] mode=transpose signal=s7
dma4 dma_copy dst=sbuf[0:32]@17920:f32[[1,128]] src0=hbm:in5@512:f32[[512,128],[1,32]] mode=transpose signal=s8
dma5 dma_copy dst=sbuf[32:32]@17920:f32[[1,128]] src0=hbm:in5@640:f32[[512,128],[1,32]] mode=transpose signal=s9
dma6 dma_copy dst=sbuf[64:32]@17920:f32[[1,128]] src0=hbm:in5@768:f32[[512,128],[1,32]] mode=transpose signal=s10
dma7 dma_copy dst=sbuf[96:32]@17920:f32[[1,128]] src0=hbm:in5@896:f32[[512,128],[1,32]] mode=transpose signal=s11
dma8 dma_copy dst=sbuf[0:32]@18432:f32[[1,128]] src0=hbm:in5@1024:f32[[512,128],[1,32]] mode=transpose signal=s12
dma9 dma_copy dst=sbuf[32:32]@18432:f32[[1,128]] src0=hbm:in5@1152:f32[[512,128],[1,32]] mode=transpose signal=s13
dma10 dma_copy dst=sbuf[64:32]@18432:f32[[1,128]] src0=hbm:in5@1280:f32[[512,128],[1,32]] mode=transpose signal=s14
dma11 dma_copy dst=sbuf[96:32]@18432:f32[[1,128]] src0=hbm:in5@1408:f32[[512,128],[1,32]] mode=transpose signal=s15
dma12 dma_copy dst=sbuf[0:32]@18944:f32[[1,128]] src0=hbm:in5@1536:f32[[512,128],[1,32]] mode=transpose signal=s16
dma13 dma_copy dst=sbuf[32:32]@18944:f32[[1,128]] src0=hbm:in5@1664:f32[[512,128],[1,32]] mode=transpose signal=s17
dma14 dma_copy dst=sbuf[64:32]@18944:f32[[1,128]] src0=hbm:in5@1792:f32[[512,128],[1,32]] mode=transpose signal=s18
dma15 dma_copy dst=sbuf[96:32]@18944:f32[[1,128]] src0=hbm:in5@1920:f32[[512,128],[1,32]] mode=transpose signal=s19
dma0 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in4@0:f32[[1024,32],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in4@131072:f32[[1024,32],[1,512]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in4@262144:f32[[1024,32],[1,512]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in4@393216:f32[[1024,32],[1,512]] mode=direct signal=s7
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@17408:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=0 wait=s4>=2,s5>=2,s6>=2,s7>=2 signal=s0
dma4 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in4@524288:f32[[1024,32],[1,512]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in4@655360:f32[[1024,32],[1,512]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in4@786432:f32[[1024,32],[1,512]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in4@917504:f32[[1024,32],[1,512]] mode=direct signal=s11
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@17920:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s8>=2,s9>=2,s10>=2,s11>=2 signal=s0
dma8 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in4@1048576:f32[[1024,32],[1,512]] mode=direct signal=s12
dma9 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in4@1179648:f32[[1024,32],[1,512]] mode=direct signal=s13
dma10 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in4@1310720:f32[[1024,32],[1,512]] mode=direct signal=s14
dma11 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in4@1441792:f32[[1024,32],[1,512]] mode=direct signal=s15
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@18432:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s12>=2,s13>=2,s14>=2,s15>=2 signal=s0
dma12 nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s16
dma12 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in4@1572864:f32[[1024,32],[1,512]] mode=direct wait=s0>=1 signal=s16
dma13 nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s17
dma13 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in4@1703936:f32[[1024,32],[1,512]] mode=direct wait=s0>=1 signal=s17
dma14 nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s18
dma14 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in4@1835008:f32[[1024,32],[1,512]] mode=direct wait=s0>=1 signal=s18
dma15 nop wait=s7>=2,s6>=2,s5>=2,s4>=2 signal=s19
dma15 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in4@1966080:f32[[1024,32],[1,512]] mode=direct wait=s0>=1 signal=s19
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@18944:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s16>=3,s17>=3,s18>=3,s19>=3 signal=s0
scalar activation dst=sbuf[0:128]@7168:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=4 signal=s2
dma0 dma_copy dst=hbm:t11@0:f32[[1024,128],[1,512]] src0=sbuf[0:128]@7168:f32[[1,512]] mode=direct wait=s2>=1 signal=s4
dma1 nop wait=s11>=2,s10>=2,s9>=2,s8>=2 signal=s5
dma1 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in4@2048:f32[[1024,32],[1,512]] mode=direct wait=s0>=2 signal=s5
dma2 nop wait=s11>=2,s10>=2,s9>=2,s8>=2 signal=s6
dma2 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in4@133120:f32[[1024,32],[1,512]] mode=direct wait=s0>=2 signal=s6
dma3 nop wait=s11>=2,s10>=2,s9>=2,s8>=2 signal=s7
dma3 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in4@264192:f32[[1024,32],[1,512]] mode=direct wait=s0>=2 signal=s7
dma4 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in4@395264:f32[[1024,32],[1,512]] mode=direct wait=s0>=2,s9>=2,s10>=2,s11>=2 signal=s8
tensor nop wait=s8>=3,s7>=4,s6>=4,s5>=4 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@17408:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=0 wait=s4>=1 signal=s0
dma5 nop wait=s15>=2,s14>=2,s13>=2,s12>=2 signal=s9
dma5 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in4@526336:f32[[1024,32],[1,512]] mode=direct wait=s0>=3 signal=s9
dma6 nop wait=s15>=2,s14>=2,s13>=2,s12>=2 signal=s10
dma6 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in4@657408:f32[[1024,32],[1,512]] mode=direct wait=s0>=3 signal=s10
dma7 nop wait=s15>=2,s14>=2,s13>=2,s12>=2 signal=s11
dma7 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in4@788480:f32[[1024,32],[1,512]] mode=direct wait=s0>=3 signal=s11
dma8 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in4@919552:f32[[1024,32],[1,512]] mode=direct wait=s0>=3,s13>=2,s14>=2,s15>=2 signal=s12
tensor nop wait=s12>=3,s11>=4,s10>=4,s9>=4 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@17920:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s8>=1 signal=s0
dma9 nop wait=s19>=3,s18>=3,s17>=3,s16>=3 signal=s13
dma9 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in4@1050624:f32[[1024,32],[1,512]] mode=direct wait=s0>=4 signal=s13
dma10 nop wait=s19>=3,s18>=3,s17>=3,s16>=3 signal=s14
dma10 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in4@1181696:f32[[1024,32],[1,512]] mode=direct wait=s0>=4 signal=s14
dma11 nop wait=s19>=3,s18>=3,s17>=3,s16>=3 signal=s15
dma11 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in4@1312768:f32[[1024,32],[1,512]] mode=direct wait=s0>=4 signal=s15
dma12 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in4@1443840:f32[[1024,32],[1,512]] mode=direct wait=s0>=4,s17>=3,s18>=3,s19>=3 signal=s16
tensor nop wait=s16>=4,s15>=4,s14>=4,s13>=4 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@18432:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s12>=1 signal=s0
dma13 nop wait=s8>=3,s7>=4,s6>=4,s5>=4 signal=s17
dma13 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in4@1574912:f32[[1024,32],[1,512]] mode=direct wait=s0>=6 signal=s17
dma14 nop wait=s8>=3,s7>=4,s6>=4,s5>=4 signal=s18
dma14 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in4@1705984:f32[[1024,32],[1,512]] mode=direct wait=s0>=6 signal=s18
dma15 nop wait=s8>=3,s7>=4,s6>=4,s5>=4 signal=s19
dma15 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in4@1837056:f32[[1024,32],[1,512]] mode=direct wait=s0>=6 signal=s19
dma0 nop wait=s8>=3,s7>=4,s6>=4,s5>=4 signal=s4
dma0 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in4@1968128:f32[[1024,32],[1,512]] mode=direct wait=s0>=6 signal=s4
tensor nop wait=s19>=5,s18>=5,s17>=5,s16>=1 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@18944:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s4>=5 signal=s0
scalar activation dst=sbuf[0:128]@9216:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=12 signal=s2
dma1 dma_copy dst=hbm:t11@2048:f32[[1024,128],[1,512]] src0=sbuf[0:128]@9216:f32[[1,512]] mode=direct wait=s2>=2 signal=s5
dma2 dma_copy dst=sbuf[0:32]@19456:f32[[1,128]] src0=hbm:in5@262144:f32[[512,128],[1,32]] mode=transpose signal=s6
dma3 dma_copy dst=sbuf[32:32]@19456:f32[[1,128]] src0=hbm:in5@262272:f32[[512,128],[1,32]] mode=transpose signal=s7
dma4 dma_copy dst=sbuf[64:32]@19456:f32[[1,128]] src0=hbm:in5@262400:f32[[512,128],[1,32]] mode=transpose signal=s8
dma5 dma_copy dst=sbuf[96:32]@19456:f32[[1,128]] src0=hbm:in5@262528:f32[[512,128],[1,32]] mode=transpose signal=s9
dma6 dma_copy dst=sbuf[0:32]@19968:f32[[1,128]] src0=hbm:in5@262656:f32[[512,128],[1,32]] mode=transpose signal=s10
dma7 dma_copy dst=sbuf[32:32]@19968:f32[[1,128]] src0=hbm:in5@262784:f32[[512,128],[1,32]] mode=transpose signal=s11
dma8 dma_copy dst=sbuf[64:32]@19968:f32[[1,128]] src0=hbm:in5@262912:f32[[512,128],[1,32]] mode=transpose signal=s12
dma9 dma_copy dst=sbuf[96:32]@19968:f32[[1,128]] src0=hbm:in5@263040:f32[[512,128],[1,32]] mode=transpose signal=s13
dma10 dma_copy dst=sbuf[0:32]@20480:f32[[1,128]] src0=hbm:in5@263168:f32[[512,128],[1,32]] mode=transpose signal=s14
dma11 dma_copy dst=sbuf[32:32]@20480:f32[[1,128]] src0=hbm:in5@263296:f32[[512,128],[1,32]] mode=transpose signal=s15
dma12 dma_copy dst=sbuf[64:32]@20480:f32[[1,128]] src0=hbm:in5@263424:f32[[512,128],[1,32]] mode=transpose signal=s16
dma13 dma_copy dst=sbuf[96:32]@20480:f32[[1,128]] src0=hbm:in5@263552:f32[[512,128],[1,32]] mode=transpose signal=s17
dma14 dma_copy dst=sbuf[0:32]@20992:f32[[1,128]] src0=hbm:in5@263680:f32[[512,128],[1,32]] mode=transpose signal=s18
dma15 dma_copy dst=sbuf[32:32]@20992:f32[[1,128]] src0=hbm:in5@263808:f32[[512,128],[1,32]] mode=transpose signal=s19
dma0 dma_copy dst=sbuf[64:32]@20992:f32[[1,128]] src0=hbm:in5@263936:f32[[512,128],[1,32]] mode=transpose signal=s4
dma1 dma_copy dst=sbuf[96:32]@20992:f32[[1,128]] src0=hbm:in5@264064:f32[[512,128],[1,32]] mode=transpose signal=s5
dma2 nop wait=s12>=3,s11>=4,s10>=4,s9>=4 signal=s6
dma2 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in4@0:f32[[1024,32],[1,512]] mode=direct wait=s0>=8 signal=s6
dma3 nop wait=s12>=3,s11>=4,s10>=4,s9>=4 signal=s7
dma3 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in4@131072:f32[[1024,32],[1,512]] mode=direct wait=s0>=8 signal=s7
dma4 nop wait=s12>=3,s11>=4,s10>=4,s9>=4 signal=s8
dma4 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in4@262144:f32[[1024,32],[1,512]] mode=direct wait=s0>=8 signal=s8
dma5 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in4@393216:f32[[1024,32],[1,512]] mode=direct wait=s0>=8,s10>=4,s11>=4,s12>=3 signal=s9
tensor nop wait=s9>=6,s8>=6,s7>=7,s6>=7 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@19456:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=0 wait=s2>=1 signal=s0
dma6 nop wait=s16>=4,s15>=4,s14>=4,s13>=4 signal=s10
dma6 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in4@524288:f32[[1024,32],[1,512]] mode=direct wait=s0>=10 signal=s10
dma7 nop wait=s16>=4,s15>=4,s14>=4,s13>=4 signal=s11
dma7 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in4@655360:f32[[1024,32],[1,512]] mode=direct wait=s0>=10 signal=s11
dma8 nop wait=s16>=4,s15>=4,s14>=4,s13>=4 signal=s12
dma8 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in4@786432:f32[[1024,32],[1,512]] mode=direct wait=s0>=10 signal=s12
dma9 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in4@917504:f32[[1024,32],[1,512]] mode=direct wait=s0>=10,s14>=4,s15>=4,s16>=4 signal=s13
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@19968:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s10>=7,s11>=7,s12>=6,s13>=6 signal=s0
dma10 nop wait=s19>=5,s18>=5,s17>=5,s4>=5 signal=s14
dma10 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in4@1048576:f32[[1024,32],[1,512]] mode=direct wait=s0>=12 signal=s14
dma11 nop wait=s19>=5,s18>=5,s17>=5,s4>=5 signal=s15
dma11 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in4@1179648:f32[[1024,32],[1,512]] mode=direct wait=s0>=12 signal=s15
dma12 nop wait=s19>=5,s18>=5,s17>=5,s4>=5 signal=s16
dma12 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in4@1310720:f32[[1024,32],[1,512]] mode=direct wait=s0>=12 signal=s16
dma13 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in4@1441792:f32[[1024,32],[1,512]] mode=direct wait=s0>=12,s4>=5,s18>=5,s19>=5 signal=s17
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@20480:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s14>=7,s15>=7,s16>=7,s17>=7 signal=s0
dma14 nop wait=s9>=6,s8>=6,s7>=7,s6>=7 signal=s18
dma14 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in4@1572864:f32[[1024,32],[1,512]] mode=direct wait=s0>=14 signal=s18
dma15 nop wait=s9>=6,s8>=6,s7>=7,s6>=7 signal=s19
dma15 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in4@1703936:f32[[1024,32],[1,512]] mode=direct wait=s0>=14 signal=s19
dma0 nop wait=s9>=6,s8>=6,s7>=7,s6>=7 signal=s4
dma0 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in4@1835008:f32[[1024,32],[1,512]] mode=direct wait=s0>=14 signal=s4
dma1 nop wait=s9>=6,s8>=6,s7>=7,s6>=7 signal=s5
dma1 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in4@1966080:f32[[1024,32],[1,512]] mode=direct wait=s0>=14 signal=s5
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@20992:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s4>=8,s5>=8,s18>=8,s19>=8 signal=s0
scalar activation dst=sbuf[0:128]@11264:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=17 signal=s2
dma2 dma_copy dst=hbm:t11@524288:f32[[1024,128],[1,512]] src0=sbuf[0:128]@11264:f32[[1,512]] mode=direct wait=s2>=3 signal=s6
dma3 nop wait=s13>=6,s12>=6,s11>=7,s10>=7 signal=s7
dma3 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in4@2048:f32[[1024,32],[1,512]] mode=direct wait=s0>=15 signal=s7
dma4 nop wait=s13>=6,s12>=6,s11>=7,s10>=7 signal=s8
dma4 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in4@133120:f32[[1024,32],[1,512]] mode=direct wait=s0>=15 signal=s8
dma5 nop wait=s13>=6,s12>=6,s11>=7,s10>=7 signal=s9
dma5 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in4@264192:f32[[1024,32],[1,512]] mode=direct wait=s0>=15 signal=s9
dma6 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in4@395264:f32[[1024,32],[1,512]] mode=direct wait=s0>=15,s11>=7,s12>=6,s13>=6 signal=s10
tensor nop wait=s10>=8,s9>=8,s8>=8,s7>=9 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@19456:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=0 wait=s2>=2,s6>=5 signal=s0
dma7 nop wait=s17>=7,s16>=7,s15>=7,s14>=7 signal=s11
dma7 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in4@526336:f32[[1024,32],[1,512]] mode=direct wait=s0>=16 signal=s11
dma8 nop wait=s17>=7,s16>=7,s15>=7,s14>=7 signal=s12
dma8 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in4@657408:f32[[1024,32],[1,512]] mode=direct wait=s0>=16 signal=s12
dma9 nop wait=s17>=7,s16>=7,s15>=7,s14>=7 signal=s13
dma9 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in4@788480:f32[[1024,32],[1,512]] mode=direct wait=s0>=16 signal=s13
dma10 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in4@919552:f32[[1024,32],[1,512]] mode=direct wait=s0>=16,s15>=7,s16>=7,s17>=7 signal=s14
tensor nop wait=s14>=8,s13>=8,s12>=8,s11>=9 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@19968:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s10>=5 signal=s0
dma11 nop wait=s19>=8,s18>=8,s5>=8,s4>=8 signal=s15
dma11 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in4@1050624:f32[[1024,32],[1,512]] mode=direct wait=s0>=17 signal=s15
dma12 nop wait=s19>=8,s18>=8,s5>=8,s4>=8 signal=s16
dma12 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in4@1181696:f32[[1024,32],[1,512]] mode=direct wait=s0>=17 signal=s16
dma13 nop wait=s19>=8,s18>=8,s5>=8,s4>=8 signal=s17
dma13 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in4@1312768:f32[[1024,32],[1,512]] mode=direct wait=s0>=17 signal=s17
dma14 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in4@1443840:f32[[1024,32],[1,512]] mode=direct wait=s0>=17,s4>=8,s5>=8,s19>=8 signal=s18
tensor nop wait=s18>=9,s17>=9,s16>=9,s15>=9 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@20480:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s14>=5 signal=s0
dma15 nop wait=s10>=8,s9>=8,s8>=8,s7>=9 signal=s19
dma15 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in4@1574912:f32[[1024,32],[1,512]] mode=direct wait=s0>=19 signal=s19
dma0 nop wait=s10>=8,s9>=8,s8>=8,s7>=9 signal=s4
dma0 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in4@1705984:f32[[1024,32],[1,512]] mode=direct wait=s0>=19 signal=s4
dma1 nop wait=s10>=8,s9>=8,s8>=8,s7>=9 signal=s5
dma1 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in4@1837056:f32[[1024,32],[1,512]] mode=direct wait=s0>=19 signal=s5
dma2 nop wait=s10>=8,s9>=8,s8>=8,s7>=9 signal=s6
dma2 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in4@1968128:f32[[1024,32],[1,512]] mode=direct wait=s0>=19 signal=s6
tensor nop wait=s19>=10,s18>=6,s6>=10,s5>=10 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@20992:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s4>=10 signal=s0
scalar activation dst=sbuf[0:128]@7168:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=25,s4>=3 signal=s2
dma3 dma_copy dst=hbm:t11@526336:f32[[1024,128],[1,512]] src0=sbuf[0:128]@7168:f32[[1,512]] mode=direct wait=s2>=4 signal=s7
.kernel k1_mm 20
dma4 dma_copy dst=sbuf[0:32]@17408:f32[[1,128]] src0=hbm:in5@0:f32[[512,32],[1,128]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[32:32]@17408:f32[[1,128]] src0=hbm:in5@65536:f32[[512,32],[1,128]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[64:32]@17408:f32[[1,128]] src0=hbm:in5@131072:f32[[512,32],[1,128]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[96:32]@17408:f32[[1,128]] src0=hbm:in5@196608:f32[[512,32],[1,128]] mode=direct signal=s11
dma8 dma_copy dst=sbuf[0:32]@17920:f32[[1,128]] src0=hbm:in5@262144:f32[[512,32],[1,128]] mode=direct signal=s12
dma9 dma_copy dst=sbuf[32:32]@17920:f32[[1,128]] src0=hbm:in5@327680:f32[[512,32],[1,128]] mode=direct signal=s13
dma10 dma_copy dst=sbuf[64:32]@17920:f32[[1,128]] src0=hbm:in5@393216:f32[[512,32],[1,128]] mode=direct signal=s14
dma11 dma_copy dst=sbuf[96:32]@17920:f32[[1,128]] src0=hbm:in5@458752:f32[[512,32],[1,128]] mode=direct signal=s15
dma12 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in3@0:f32[[1024,32],[1,512]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in3@131072:f32[[1024,32],[1,512]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in3@262144:f32[[1024,32],[1,512]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in3@393216:f32[[1024,32],[1,512]] mode=direct signal=s19
tensor nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@17408:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=0 wait=s8>=1,s9>=1,s10>=1,s11>=1 signal=s0
dma0 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in3@524288:f32[[1024,32],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in3@655360:f32[[1024,32],[1,512]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in3@786432:f32[[1024,32],[1,512]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in3@917504:f32[[1024,32],[1,512]] mode=direct signal=s7
tensor nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@17920:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s4>=1,s5>=1,s6>=1,s7>=1 signal=s0
scalar activation dst=sbuf[0:128]@7168:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=4 signal=s2
dma4 dma_copy dst=hbm:out9@0:f32[[1024,128],[1,512]] src0=sbuf[0:128]@7168:f32[[1,512]] mode=direct wait=s2>=1 signal=s8
dma5 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in3@2048:f32[[1024,32],[1,512]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in3@133120:f32[[1024,32],[1,512]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in3@264192:f32[[1024,32],[1,512]] mode=direct signal=s11
dma8 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in3@395264:f32[[1024,32],[1,512]] mode=direct signal=s12
tensor nop wait=s12>=2,s11>=2,s10>=2,s9>=2 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@17408:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=0 wait=s8>=1 signal=s0
dma9 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s13
dma9 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in3@526336:f32[[1024,32],[1,512]] mode=direct wait=s0>=2 signal=s13
dma10 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s14
dma10 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in3@657408:f32[[1024,32],[1,512]] mode=direct wait=s0>=2 signal=s14
dma11 nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s15
dma11 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in3@788480:f32[[1024,32],[1,512]] mode=direct wait=s0>=2 signal=s15
dma12 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in3@919552:f32[[1024,32],[1,512]] mode=direct wait=s0>=2,s17>=1,s18>=1,s19>=1 signal=s16
tensor nop wait=s16>=2,s15>=3,s14>=3,s13>=3 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@17920:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s12>=1 signal=s0
scalar activation dst=sbuf[0:128]@9216:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=8 signal=s2
dma13 dma_copy dst=hbm:out9@2048:f32[[1024,128],[1,512]] src0=sbuf[0:128]@9216:f32[[1,512]] mode=direct wait=s2>=2 signal=s17
dma14 dma_copy dst=sbuf[0:32]@18432:f32[[1,128]] src0=hbm:in5@512:f32[[512,32],[1,128]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[32:32]@18432:f32[[1,128]] src0=hbm:in5@66048:f32[[512,32],[1,128]] mode=direct signal=s19
dma0 dma_copy dst=sbuf[64:32]@18432:f32[[1,128]] src0=hbm:in5@131584:f32[[512,32],[1,128]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[96:32]@18432:f32[[1,128]] src0=hbm:in5@197120:f32[[512,32],[1,128]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[0:32]@18944:f32[[1,128]] src0=hbm:in5@262656:f32[[512,32],[1,128]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[32:32]@18944:f32[[1,128]] src0=hbm:in5@328192:f32[[512,32],[1,128]] mode=direct signal=s7
dma4 dma_copy dst=sbuf[64:32]@18944:f32[[1,128]] src0=hbm:in5@393728:f32[[512,32],[1,128]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[96:32]@18944:f32[[1,128]] src0=hbm:in5@459264:f32[[512,32],[1,128]] mode=direct signal=s9
dma6 nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s10
dma6 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in3@0:f32[[1024,32],[1,512]] mode=direct wait=s0>=4 signal=s10
dma7 nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s11
dma7 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in3@131072:f32[[1024,32],[1,512]] mode=direct wait=s0>=4 signal=s11
dma8 nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s12
dma8 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in3@262144:f32[[1024,32],[1,512]] mode=direct wait=s0>=4 signal=s12
dma9 nop wait=s7>=1,s6>=1,s5>=1,s4>=1 signal=s13
dma9 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in3@393216:f32[[1024,32],[1,512]] mode=direct wait=s0>=4 signal=s13
tensor nop wait=s19>=2,s18>=2,s13>=5,s12>=4 signal=s0
tensor nop wait=s11>=4,s10>=4,s5>=2,s4>=2 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@18432:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=0 wait=s2>=1 signal=s0
dma10 nop wait=s12>=2,s11>=2,s10>=2,s9>=2 signal=s14
dma10 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in3@524288:f32[[1024,32],[1,512]] mode=direct wait=s0>=6 signal=s14
dma11 nop wait=s12>=2,s11>=2,s10>=2,s9>=2 signal=s15
dma11 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in3@655360:f32[[1024,32],[1,512]] mode=direct wait=s0>=6 signal=s15
dma12 nop wait=s12>=2,s11>=2,s10>=2,s9>=2 signal=s16
dma12 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in3@786432:f32[[1024,32],[1,512]] mode=direct wait=s0>=6 signal=s16
dma13 nop wait=s12>=2,s11>=2,s10>=2,s9>=2 signal=s17
dma13 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in3@917504:f32[[1024,32],[1,512]] mode=direct wait=s0>=6 signal=s17
tensor nop wait=s17>=4,s16>=4,s15>=5,s14>=5 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@18944:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s6>=2,s7>=2,s8>=3,s9>=3 signal=s0
scalar activation dst=sbuf[0:128]@11264:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=13 signal=s2
dma14 dma_copy dst=hbm:out9@524288:f32[[1024,128],[1,512]] src0=sbuf[0:128]@11264:f32[[1,512]] mode=direct wait=s2>=3 signal=s18
dma15 nop wait=s16>=2,s15>=3,s14>=3,s13>=3 signal=s19
dma15 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in3@2048:f32[[1024,32],[1,512]] mode=direct wait=s0>=8 signal=s19
dma0 nop wait=s16>=2,s15>=3,s14>=3,s13>=3 signal=s4
dma0 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in3@133120:f32[[1024,32],[1,512]] mode=direct wait=s0>=8 signal=s4
dma1 nop wait=s16>=2,s15>=3,s14>=3,s13>=3 signal=s5
dma1 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in3@264192:f32[[1024,32],[1,512]] mode=direct wait=s0>=8 signal=s5
dma2 nop wait=s16>=2,s15>=3,s14>=3,s13>=3 signal=s6
dma2 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in3@395264:f32[[1024,32],[1,512]] mode=direct wait=s0>=8 signal=s6
tensor nop wait=s19>=4,s18>=2,s6>=4,s5>=4 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@18432:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=0 wait=s2>=2,s4>=4 signal=s0
dma3 nop wait=s13>=5,s12>=4,s11>=4,s10>=4 signal=s7
dma3 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in3@526336:f32[[1024,32],[1,512]] mode=direct wait=s0>=11 signal=s7
dma4 nop wait=s13>=5,s12>=4,s11>=4,s10>=4 signal=s8
dma4 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in3@657408:f32[[1024,32],[1,512]] mode=direct wait=s0>=11 signal=s8
dma5 nop wait=s13>=5,s12>=4,s11>=4,s10>=4 signal=s9
dma5 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in3@788480:f32[[1024,32],[1,512]] mode=direct wait=s0>=11 signal=s9
dma6 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in3@919552:f32[[1024,32],[1,512]] mode=direct wait=s0>=11,s11>=4,s12>=4,s13>=5 signal=s10
tensor nop wait=s10>=5,s9>=5,s8>=5,s7>=4 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@18944:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s6>=2 signal=s0
scalar activation dst=sbuf[0:128]@7168:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=17,s8>=2 signal=s2
dma7 dma_copy dst=hbm:out9@526336:f32[[1024,128],[1,512]] src0=sbuf[0:128]@7168:f32[[1,512]] mode=direct wait=s2>=4 signal=s11
dma8 nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s12
dma8 dma_copy dst=sbuf[0:32]@17408:f32[[1,128]] src0=hbm:in5@1024:f32[[512,32],[1,128]] mode=direct wait=s0>=6 signal=s12
dma9 nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s13
dma9 dma_copy dst=sbuf[32:32]@17408:f32[[1,128]] src0=hbm:in5@66560:f32[[512,32],[1,128]] mode=direct wait=s0>=6 signal=s13
dma10 nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s14
dma10 dma_copy dst=sbuf[64:32]@17408:f32[[1,128]] src0=hbm:in5@132096:f32[[512,32],[1,128]] mode=direct wait=s0>=6 signal=s14
dma11 nop wait=s11>=1,s10>=1,s9>=1,s8>=1 signal=s15
dma11 dma_copy dst=sbuf[96:32]@17408:f32[[1,128]] src0=hbm:in5@197632:f32[[512,32],[1,128]] mode=direct wait=s0>=6 signal=s15
dma12 nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s16
dma12 dma_copy dst=sbuf[0:32]@17920:f32[[1,128]] src0=hbm:in5@263168:f32[[512,32],[1,128]] mode=direct wait=s0>=8 signal=s16
dma13 nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s17
dma13 dma_copy dst=sbuf[32:32]@17920:f32[[1,128]] src0=hbm:in5@328704:f32[[512,32],[1,128]] mode=direct wait=s0>=8 signal=s17
dma14 nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s18
dma14 dma_copy dst=sbuf[64:32]@17920:f32[[1,128]] src0=hbm:in5@394240:f32[[512,32],[1,128]] mode=direct wait=s0>=8 signal=s18
dma15 nop wait=s15>=1,s14>=1,s13>=1,s12>=1 signal=s19
dma15 dma_copy dst=sbuf[96:32]@17920:f32[[1,128]] src0=hbm:in5@459776:f32[[512,32],[1,128]] mode=direct wait=s0>=8 signal=s19
dma0 nop wait=s17>=4,s16>=4,s15>=5,s14>=5 signal=s4
dma0 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in3@0:f32[[1024,32],[1,512]] mode=direct wait=s0>=13 signal=s4
dma1 nop wait=s17>=4,s16>=4,s15>=5,s14>=5 signal=s5
dma1 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in3@131072:f32[[1024,32],[1,512]] mode=direct wait=s0>=13 signal=s5
dma2 nop wait=s17>=4,s16>=4,s15>=5,s14>=5 signal=s6
dma2 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in3@262144:f32[[1024,32],[1,512]] mode=direct wait=s0>=13 signal=s6
dma3 nop wait=s17>=4,s16>=4,s15>=5,s14>=5 signal=s7
dma3 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in3@393216:f32[[1024,32],[1,512]] mode=direct wait=s0>=13 signal=s7
tensor nop wait=s15>=7,s14>=7,s13>=7,s12>=6 signal=s0
tensor nop wait=s7>=6,s6>=6,s5>=6,s4>=6 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@17408:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=0 wait=s2>=3 signal=s0
dma4 nop wait=s19>=4,s6>=4,s5>=4,s4>=4 signal=s8
dma4 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in3@524288:f32[[1024,32],[1,512]] mode=direct wait=s0>=15 signal=s8
dma5 nop wait=s19>=4,s6>=4,s5>=4,s4>=4 signal=s9
dma5 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in3@655360:f32[[1024,32],[1,512]] mode=direct wait=s0>=15 signal=s9
dma6 nop wait=s19>=4,s6>=4,s5>=4,s4>=4 signal=s10
dma6 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in3@786432:f32[[1024,32],[1,512]] mode=direct wait=s0>=15 signal=s10
dma7 nop wait=s19>=4,s6>=4,s5>=4,s4>=4 signal=s11
dma7 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in3@917504:f32[[1024,32],[1,512]] mode=direct wait=s0>=15 signal=s11
tensor nop wait=s19>=6,s18>=5,s17>=6,s16>=6 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@17920:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s8>=7,s9>=7,s10>=7,s11>=7 signal=s0
scalar activation dst=sbuf[0:128]@9216:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=22,s17>=2 signal=s2
dma8 dma_copy dst=hbm:out9@1048576:f32[[1024,128],[1,512]] src0=sbuf[0:128]@9216:f32[[1,512]] mode=direct wait=s2>=5 signal=s12
dma9 nop wait=s10>=5,s9>=5,s8>=5,s7>=4 signal=s13
dma9 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in3@2048:f32[[1024,32],[1,512]] mode=direct wait=s0>=17 signal=s13
dma10 nop wait=s10>=5,s9>=5,s8>=5,s7>=4 signal=s14
dma10 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in3@133120:f32[[1024,32],[1,512]] mode=direct wait=s0>=17 signal=s14
dma11 nop wait=s10>=5,s9>=5,s8>=5,s7>=4 signal=s15
dma11 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in3@264192:f32[[1024,32],[1,512]] mode=direct wait=s0>=17 signal=s15
dma12 nop wait=s10>=5,s9>=5,s8>=5,s7>=4 signal=s16
dma12 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in3@395264:f32[[1024,32],[1,512]] mode=direct wait=s0>=17 signal=s16
tensor nop wait=s16>=8,s15>=9,s14>=9,s13>=9 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@17408:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=0 wait=s2>=4,s12>=6 signal=s0
dma13 nop wait=s7>=6,s6>=6,s5>=6,s4>=6 signal=s17
dma13 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in3@526336:f32[[1024,32],[1,512]] mode=direct wait=s0>=20 signal=s17
dma14 nop wait=s7>=6,s6>=6,s5>=6,s4>=6 signal=s18
dma14 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in3@657408:f32[[1024,32],[1,512]] mode=direct wait=s0>=20 signal=s18
dma15 nop wait=s7>=6,s6>=6,s5>=6,s4>=6 signal=s19
dma15 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in3@788480:f32[[1024,32],[1,512]] mode=direct wait=s0>=20 signal=s19
dma0 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in3@919552:f32[[1024,32],[1,512]] mode=direct wait=s0>=20,s5>=6,s6>=6,s7>=6 signal=s4
tensor nop wait=s19>=8,s18>=7,s17>=8,s16>=6 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@17920:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s4>=7 signal=s0
scalar activation dst=sbuf[0:128]@11264:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=26,s18>=3 signal=s2
dma1 dma_copy dst=hbm:out9@1050624:f32[[1024,128],[1,512]] src0=sbuf[0:128]@11264:f32[[1,512]] mode=direct wait=s2>=6 signal=s5
dma2 nop wait=s19>=2,s18>=2,s5>=2,s4>=2 signal=s6
dma2 dma_copy dst=sbuf[0:32]@18432:f32[[1,128]] src0=hbm:in5@1536:f32[[512,32],[1,128]] mode=direct wait=s0>=15 signal=s6
dma3 nop wait=s19>=2,s18>=2,s5>=2,s4>=2 signal=s7
dma3 dma_copy dst=sbuf[32:32]@18432:f32[[1,128]] src0=hbm:in5@67072:f32[[512,32],[1,128]] mode=direct wait=s0>=15 signal=s7
dma4 nop wait=s19>=2,s18>=2,s5>=2,s4>=2 signal=s8
dma4 dma_copy dst=sbuf[64:32]@18432:f32[[1,128]] src0=hbm:in5@132608:f32[[512,32],[1,128]] mode=direct wait=s0>=15 signal=s8
dma5 nop wait=s19>=2,s18>=2,s5>=2,s4>=2 signal=s9
dma5 dma_copy dst=sbuf[96:32]@18432:f32[[1,128]] src0=hbm:in5@198144:f32[[512,32],[1,128]] mode=direct wait=s0>=15 signal=s9
dma6 nop wait=s9>=3,s8>=3,s7>=2,s6>=2 signal=s10
dma6 dma_copy dst=sbuf[0:32]@18944:f32[[1,128]] src0=hbm:in5@263680:f32[[512,32],[1,128]] mode=direct wait=s0>=17 signal=s10
dma7 nop wait=s9>=3,s8>=3,s7>=2,s6>=2 signal=s11
dma7 dma_copy dst=sbuf[32:32]@18944:f32[[1,128]] src0=hbm:in5@329216:f32[[512,32],[1,128]] mode=direct wait=s0>=17 signal=s11
dma8 nop wait=s9>=3,s8>=3,s7>=2,s6>=2 signal=s12
dma8 dma_copy dst=sbuf[64:32]@18944:f32[[1,128]] src0=hbm:in5@394752:f32[[512,32],[1,128]] mode=direct wait=s0>=17 signal=s12
dma9 nop wait=s9>=3,s8>=3,s7>=2,s6>=2 signal=s13
dma9 dma_copy dst=sbuf[96:32]@18944:f32[[1,128]] src0=hbm:in5@460288:f32[[512,32],[1,128]] mode=direct wait=s0>=17 signal=s13
dma10 nop wait=s11>=7,s10>=7,s9>=7,s8>=7 signal=s14
dma10 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in3@0:f32[[1024,32],[1,512]] mode=direct wait=s0>=22 signal=s14
dma11 nop wait=s11>=7,s10>=7,s9>=7,s8>=7 signal=s15
dma11 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in3@131072:f32[[1024,32],[1,512]] mode=direct wait=s0>=22 signal=s15
dma12 nop wait=s11>=7,s10>=7,s9>=7,s8>=7 signal=s16
dma12 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in3@262144:f32[[1024,32],[1,512]] mode=direct wait=s0>=22 signal=s16
dma13 nop wait=s11>=7,s10>=7,s9>=7,s8>=7 signal=s17
dma13 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in3@393216:f32[[1024,32],[1,512]] mode=direct wait=s0>=22 signal=s17
tensor nop wait=s17>=10,s16>=10,s15>=11,s14>=11 signal=s0
tensor nop wait=s9>=9,s8>=9,s7>=8,s6>=8 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@18432:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=0 wait=s2>=5 signal=s0
dma14 nop wait=s16>=8,s15>=9,s14>=9,s13>=9 signal=s18
dma14 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in3@524288:f32[[1024,32],[1,512]] mode=direct wait=s0>=24 signal=s18
dma15 nop wait=s16>=8,s15>=9,s14>=9,s13>=9 signal=s19
dma15 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in3@655360:f32[[1024,32],[1,512]] mode=direct wait=s0>=24 signal=s19
dma0 nop wait=s16>=8,s15>=9,s14>=9,s13>=9 signal=s4
dma0 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in3@786432:f32[[1024,32],[1,512]] mode=direct wait=s0>=24 signal=s4
dma1 nop wait=s16>=8,s15>=9,s14>=9,s13>=9 signal=s5
dma1 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in3@917504:f32[[1024,32],[1,512]] mode=direct wait=s0>=24 signal=s5
tensor nop wait=s19>=10,s18>=9,s13>=11,s12>=9 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@18944:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s4>=9,s5>=9,s10>=9,s11>=9 signal=s0
scalar activation dst=sbuf[0:128]@7168:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=31,s11>=5 signal=s2
dma2 dma_copy dst=hbm:out9@1572864:f32[[1024,128],[1,512]] src0=sbuf[0:128]@7168:f32[[1,512]] mode=direct wait=s2>=7 signal=s6
dma3 nop wait=s19>=8,s18>=7,s17>=8,s4>=7 signal=s7
dma3 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in3@2048:f32[[1024,32],[1,512]] mode=direct wait=s0>=26 signal=s7
dma4 nop wait=s19>=8,s18>=7,s17>=8,s4>=7 signal=s8
dma4 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in3@133120:f32[[1024,32],[1,512]] mode=direct wait=s0>=26 signal=s8
dma5 nop wait=s19>=8,s18>=7,s17>=8,s4>=7 signal=s9
dma5 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in3@264192:f32[[1024,32],[1,512]] mode=direct wait=s0>=26 signal=s9
dma6 nop wait=s19>=8,s18>=7,s17>=8,s4>=7 signal=s10
dma6 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in3@395264:f32[[1024,32],[1,512]] mode=direct wait=s0>=26 signal=s10
tensor nop wait=s10>=11,s9>=11,s8>=11,s7>=10 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@18432:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=0 wait=s2>=6,s6>=8 signal=s0
dma7 nop wait=s17>=10,s16>=10,s15>=11,s14>=11 signal=s11
dma7 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in3@526336:f32[[1024,32],[1,512]] mode=direct wait=s0>=29 signal=s11
dma8 nop wait=s17>=10,s16>=10,s15>=11,s14>=11 signal=s12
dma8 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in3@657408:f32[[1024,32],[1,512]] mode=direct wait=s0>=29 signal=s12
dma9 nop wait=s17>=10,s16>=10,s15>=11,s14>=11 signal=s13
dma9 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in3@788480:f32[[1024,32],[1,512]] mode=direct wait=s0>=29 signal=s13
dma10 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in3@919552:f32[[1024,32],[1,512]] mode=direct wait=s0>=29,s15>=11,s16>=10,s17>=10 signal=s14
tensor nop wait=s14>=12,s13>=13,s12>=11,s11>=11 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@18944:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s10>=9 signal=s0
scalar activation dst=sbuf[0:128]@9216:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=35,s12>=7 signal=s2
dma11 dma_copy dst=hbm:out9@1574912:f32[[1024,128],[1,512]] src0=sbuf[0:128]@9216:f32[[1,512]] mode=direct wait=s2>=8 signal=s15
.kernel k2_sum 20
dma12 dma_copy dst=sbuf[0:128]@0:f32[[1,256]] src0=hbm:in5@0:f32[[1,128],[512,256]] mode=direct signal=s16
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@0:f32[[1,256]] op=add axes=1 wait=s16>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49280:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 signal=s1
dma13 dma_copy dst=hbm:t12@0:f32[[1,128],[1,1]] src0=sbuf[0:128]@49280:f32[[1,1]] mode=direct wait=s1>=2 signal=s17
dma14 dma_copy dst=sbuf[0:128]@16384:f32[[1,256]] src0=hbm:in5@512:f32[[1,128],[512,256]] mode=direct signal=s18
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@16384:f32[[1,256]] op=add axes=1 wait=s18>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49344:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 signal=s1
dma15 dma_copy dst=hbm:t12@512:f32[[1,128],[1,1]] src0=sbuf[0:128]@49344:f32[[1,1]] mode=direct wait=s1>=4 signal=s19
dma0 dma_copy dst=sbuf[0:128]@32768:f32[[1,256]] src0=hbm:in5@1024:f32[[1,128],[512,256]] mode=direct signal=s4
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@32768:f32[[1,256]] op=add axes=1 wait=s4>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49280:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 wait=s17>=1 signal=s1
dma1 dma_copy dst=hbm:t12@1024:f32[[1,128],[1,1]] src0=sbuf[0:128]@49280:f32[[1,1]] mode=direct wait=s1>=6 signal=s5
dma2 dma_copy dst=sbuf[0:128]@0:f32[[1,256]] src0=hbm:in5@1536:f32[[1,128],[512,256]] mode=direct wait=s1>=1,s16>=1 signal=s6
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@0:f32[[1,256]] op=add axes=1 wait=s6>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49344:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 wait=s19>=1 signal=s1
dma3 dma_copy dst=hbm:t12@1536:f32[[1,128],[1,1]] src0=sbuf[0:128]@49344:f32[[1,1]] mode=direct wait=s1>=8 signal=s7
.kernel k3_threshold_backward 20
dma4 dma_copy dst=sbuf[0:128]@0:f32[[1,2048]] src0=hbm:t11@0:f32[[2048,128],[1,2048]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[0:128]@43008:f32[[1,2048]] src0=hbm:in2@0:f32[[2048,128],[1,2048]] mode=direct signal=s9
vector tensor_scalar dst=sbuf[0:128]@86016:f32[[1,2048]] src0=sbuf[0:128]@43008:f32[[1,2048]] op=gt op1=bypass imm0=0 imm1=0 wait=s9>=1 signal=s1
vector memset dst=sbuf[0:128]@114688:f32[[1,2048]] imm0=0 signal=s1
vector select dst=sbuf[0:128]@143360:f32[[1,2048]] src0=sbuf[0:128]@86016:f32[[1,2048]] src1=sbuf[0:128]@0:f32[[1,2048]] src2=sbuf[0:128]@114688:f32[[1,2048]] wait=s8>=1 signal=s1
dma6 dma_copy dst=hbm:t13@0:f32[[2048,128],[1,2048]] src0=sbuf[0:128]@143360:f32[[1,2048]] mode=direct wait=s1>=3 signal=s10
.kernel k4_mm 20
dma7 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@0:f32[[1024,128],[1,32]] mode=transpose signal=s11
dma8 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@128:f32[[1024,128],[1,32]] mode=transpose signal=s12
dma9 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@256:f32[[1024,128],[1,32]] mode=transpose signal=s13
dma10 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@384:f32[[1024,128],[1,32]] mode=transpose signal=s14
dma11 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in1@0:f32[[512,32],[1,512]] mode=direct signal=s15
dma12 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in1@65536:f32[[512,32],[1,512]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in1@131072:f32[[512,32],[1,512]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in1@196608:f32[[512,32],[1,512]] mode=direct signal=s18
tensor nop wait=s18>=1,s17>=1,s16>=1,s15>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=0 wait=s11>=1,s12>=1,s13>=1,s14>=1 signal=s0
dma15 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@512:f32[[1024,128],[1,32]] mode=transpose signal=s19
dma0 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@640:f32[[1024,128],[1,32]] mode=transpose signal=s4
dma1 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@768:f32[[1024,128],[1,32]] mode=transpose signal=s5
dma2 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@896:f32[[1024,128],[1,32]] mode=transpose signal=s6
dma3 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in1@262144:f32[[512,32],[1,512]] mode=direct signal=s7
dma4 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in1@327680:f32[[512,32],[1,512]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in1@393216:f32[[512,32],[1,512]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in1@458752:f32[[512,32],[1,512]] mode=direct signal=s10
tensor nop wait=s19>=1,s10>=1,s9>=1,s8>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s4>=1,s5>=1,s6>=1,s7>=1 signal=s0
dma7 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@1024:f32[[1024,128],[1,32]] mode=transpose wait=s0>=2,s12>=1,s13>=1,s14>=1 signal=s11
dma8 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@1152:f32[[1024,128],[1,32]] mode=transpose wait=s0>=2,s11>=1,s13>=1,s14>=1 signal=s12
dma9 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@1280:f32[[1024,128],[1,32]] mode=transpose wait=s0>=2,s11>=1,s12>=1,s14>=1 signal=s13
dma10 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@1408:f32[[1024,128],[1,32]] mode=transpose wait=s0>=2,s11>=1,s12>=1,s13>=1 signal=s14
dma11 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in1@524288:f32[[512,32],[1,512]] mode=direct signal=s15
dma12 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in1@589824:f32[[512,32],[1,512]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in1@655360:f32[[512,32],[1,512]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in1@720896:f32[[512,32],[1,512]] mode=direct signal=s18
tensor nop wait=s18>=2,s17>=2,s16>=2,s15>=2 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s11>=2,s12>=2,s13>=2,s14>=2 signal=s0
dma15 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@1536:f32[[1024,128],[1,32]] mode=transpose wait=s0>=4,s4>=1,s5>=1,s6>=1 signal=s19
dma0 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@1664:f32[[1024,128],[1,32]] mode=transpose wait=s0>=4,s5>=1,s6>=1,s19>=1 signal=s4
dma1 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@1792:f32[[1024,128],[1,32]] mode=transpose wait=s0>=4,s4>=1,s6>=1,s19>=1 signal=s5
dma2 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@1920:f32[[1024,128],[1,32]] mode=transpose wait=s0>=4,s4>=1,s5>=1,s19>=1 signal=s6
dma3 nop wait=s18>=1,s17>=1,s16>=1,s15>=1 signal=s7
dma3 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in1@786432:f32[[512,32],[1,512]] mode=direct wait=s0>=2 signal=s7
dma4 nop wait=s18>=1,s17>=1,s16>=1,s15>=1 signal=s8
dma4 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in1@851968:f32[[512,32],[1,512]] mode=direct wait=s0>=2 signal=s8
dma5 nop wait=s18>=1,s17>=1,s16>=1,s15>=1 signal=s9
dma5 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in1@917504:f32[[512,32],[1,512]] mode=direct wait=s0>=2 signal=s9
dma6 nop wait=s18>=1,s17>=1,s16>=1,s15>=1 signal=s10
dma6 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in1@983040:f32[[512,32],[1,512]] mode=direct wait=s0>=2 signal=s10
tensor nop wait=s19>=2,s10>=3,s9>=3,s8>=3 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s4>=2,s5>=2,s6>=2,s7>=3 signal=s0
dma7 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@2048:f32[[1024,128],[1,32]] mode=transpose wait=s0>=6,s12>=2,s13>=2,s14>=2 signal=s11
dma8 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@2176:f32[[1024,128],[1,32]] mode=transpose wait=s0>=6,s11>=2,s13>=2,s14>=2 signal=s12
dma9 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@2304:f32[[1024,128],[1,32]] mode=transpose wait=s0>=6,s11>=2,s12>=2,s14>=2 signal=s13
dma10 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@2432:f32[[1024,128],[1,32]] mode=transpose wait=s0>=6,s11>=2,s12>=2,s13>=2 signal=s14
dma11 nop wait=s10>=1,s9>=1,s8>=1,s7>=1 signal=s15
dma11 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in1@1048576:f32[[512,32],[1,512]] mode=direct wait=s0>=4 signal=s15
dma12 nop wait=s10>=1,s9>=1,s8>=1,s7>=1 signal=s16
dma12 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in1@1114112:f32[[512,32],[1,512]] mode=direct wait=s0>=4 signal=s16
dma13 nop wait=s10>=1,s9>=1,s8>=1,s7>=1 signal=s17
dma13 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in1@1179648:f32[[512,32],[1,512]] mode=direct wait=s0>=4 signal=s17
dma14 nop wait=s10>=1,s9>=1,s8>=1,s7>=1 signal=s18
dma14 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in1@1245184:f32[[512,32],[1,512]] mode=direct wait=s0>=4 signal=s18
tensor nop wait=s18>=4,s17>=4,s16>=4,s15>=4 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s11>=3,s12>=3,s13>=3,s14>=3 signal=s0
dma15 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@2560:f32[[1024,128],[1,32]] mode=transpose wait=s0>=8,s4>=2,s5>=2,s6>=2 signal=s19
dma0 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@2688:f32[[1024,128],[1,32]] mode=transpose wait=s0>=8,s5>=2,s6>=2,s19>=2 signal=s4
dma1 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@2816:f32[[1024,128],[1,32]] mode=transpose wait=s0>=8,s4>=2,s6>=2,s19>=2 signal=s5
dma2 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@2944:f32[[1024,128],[1,32]] mode=transpose wait=s0>=8,s4>=2,s5>=2,s19>=2 signal=s6
dma3 nop wait=s18>=2,s17>=2,s16>=2,s15>=2 signal=s7
dma3 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in1@1310720:f32[[512,32],[1,512]] mode=direct wait=s0>=6 signal=s7
dma4 nop wait=s18>=2,s17>=2,s16>=2,s15>=2 signal=s8
dma4 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in1@1376256:f32[[512,32],[1,512]] mode=direct wait=s0>=6 signal=s8
dma5 nop wait=s18>=2,s17>=2,s16>=2,s15>=2 signal=s9
dma5 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in1@1441792:f32[[512,32],[1,512]] mode=direct wait=s0>=6 signal=s9
dma6 nop wait=s18>=2,s17>=2,s16>=2,s15>=2 signal=s10
dma6 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in1@1507328:f32[[512,32],[1,512]] mode=direct wait=s0>=6 signal=s10
tensor nop wait=s19>=3,s10>=5,s9>=5,s8>=5 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s4>=3,s5>=3,s6>=3,s7>=5 signal=s0
dma7 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@3072:f32[[1024,128],[1,32]] mode=transpose wait=s0>=10,s12>=3,s13>=3,s14>=3 signal=s11
dma8 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@3200:f32[[1024,128],[1,32]] mode=transpose wait=s0>=10,s11>=3,s13>=3,s14>=3 signal=s12
dma9 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@3328:f32[[1024,128],[1,32]] mode=transpose wait=s0>=10,s11>=3,s12>=3,s14>=3 signal=s13
dma10 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@3456:f32[[1024,128],[1,32]] mode=transpose wait=s0>=10,s11>=3,s12>=3,s13>=3 signal=s14
dma11 nop wait=s10>=3,s9>=3,s8>=3,s7>=3 signal=s15
dma11 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in1@1572864:f32[[512,32],[1,512]] mode=direct wait=s0>=8 signal=s15
dma12 nop wait=s10>=3,s9>=3,s8>=3,s7>=3 signal=s16
dma12 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in1@1638400:f32[[512,32],[1,512]] mode=direct wait=s0>=8 signal=s16
dma13 nop wait=s10>=3,s9>=3,s8>=3,s7>=3 signal=s17
dma13 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in1@1703936:f32[[512,32],[1,512]] mode=direct wait=s0>=8 signal=s17
dma14 nop wait=s10>=3,s9>=3,s8>=3,s7>=3 signal=s18
dma14 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in1@1769472:f32[[512,32],[1,512]] mode=direct wait=s0>=8 signal=s18
tensor nop wait=s18>=6,s17>=6,s16>=6,s15>=6 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s11>=4,s12>=4,s13>=4,s14>=4 signal=s0
dma15 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@3584:f32[[1024,128],[1,32]] mode=transpose wait=s0>=12,s4>=3,s5>=3,s6>=3 signal=s19
dma0 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@3712:f32[[1024,128],[1,32]] mode=transpose wait=s0>=12,s5>=3,s6>=3,s19>=3 signal=s4
dma1 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@3840:f32[[1024,128],[1,32]] mode=transpose wait=s0>=12,s4>=3,s6>=3,s19>=3 signal=s5
dma2 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@3968:f32[[1024,128],[1,32]] mode=transpose wait=s0>=12,s4>=3,s5>=3,s19>=3 signal=s6
dma3 nop wait=s18>=4,s17>=4,s16>=4,s15>=4 signal=s7
dma3 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in1@1835008:f32[[512,32],[1,512]] mode=direct wait=s0>=10 signal=s7
dma4 nop wait=s18>=4,s17>=4,s16>=4,s15>=4 signal=s8
dma4 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in1@1900544:f32[[512,32],[1,512]] mode=direct wait=s0>=10 signal=s8
dma5 nop wait=s18>=4,s17>=4,s16>=4,s15>=4 signal=s9
dma5 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in1@1966080:f32[[512,32],[1,512]] mode=direct wait=s0>=10 signal=s9
dma6 nop wait=s18>=4,s17>=4,s16>=4,s15>=4 signal=s10
dma6 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in1@2031616:f32[[512,32],[1,512]] mode=direct wait=s0>=10 signal=s10
tensor nop wait=s19>=4,s10>=7,s9>=7,s8>=7 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s4>=4,s5>=4,s6>=4,s7>=7 signal=s0
scalar activation dst=sbuf[0:128]@7168:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=16 signal=s2
dma7 dma_copy dst=hbm:t14@0:f32[[512,128],[1,512]] src0=sbuf[0:128]@7168:f32[[1,512]] mode=direct wait=s2>=1 signal=s11
dma8 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@524288:f32[[1024,128],[1,32]] mode=transpose wait=s0>=14,s11>=4,s13>=4,s14>=4 signal=s12
dma9 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@524416:f32[[1024,128],[1,32]] mode=transpose wait=s0>=14,s11>=4,s12>=4,s14>=4 signal=s13
dma10 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@524544:f32[[1024,128],[1,32]] mode=transpose wait=s0>=14,s11>=4,s12>=4,s13>=4 signal=s14
dma11 nop wait=s14>=4,s13>=4,s12>=4,s11>=4 signal=s15
dma11 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@524672:f32[[1024,128],[1,32]] mode=transpose wait=s0>=14 signal=s15
dma12 nop wait=s10>=5,s9>=5,s8>=5,s7>=5 signal=s16
dma12 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in1@0:f32[[512,32],[1,512]] mode=direct wait=s0>=12 signal=s16
dma13 nop wait=s10>=5,s9>=5,s8>=5,s7>=5 signal=s17
dma13 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in1@65536:f32[[512,32],[1,512]] mode=direct wait=s0>=12 signal=s17
dma14 nop wait=s10>=5,s9>=5,s8>=5,s7>=5 signal=s18
dma14 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in1@131072:f32[[512,32],[1,512]] mode=direct wait=s0>=12 signal=s18
dma15 nop wait=s10>=5,s9>=5,s8>=5,s7>=5 signal=s19
dma15 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in1@196608:f32[[512,32],[1,512]] mode=direct wait=s0>=12 signal=s19
tensor nop wait=s19>=6,s18>=8,s17>=8,s16>=8 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=0 wait=s12>=5,s13>=5,s14>=5,s15>=8 signal=s0
dma0 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@524800:f32[[1024,128],[1,32]] mode=transpose wait=s0>=16,s5>=4,s6>=4,s19>=4 signal=s4
dma1 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@524928:f32[[1024,128],[1,32]] mode=transpose wait=s0>=16,s4>=4,s6>=4,s19>=4 signal=s5
dma2 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@525056:f32[[1024,128],[1,32]] mode=transpose wait=s0>=16,s4>=4,s5>=4,s19>=4 signal=s6
dma3 nop wait=s19>=4,s6>=4,s5>=4,s4>=4 signal=s7
dma3 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@525184:f32[[1024,128],[1,32]] mode=transpose wait=s0>=16 signal=s7
dma4 nop wait=s18>=6,s17>=6,s16>=6,s15>=6 signal=s8
dma4 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in1@262144:f32[[512,32],[1,512]] mode=direct wait=s0>=14 signal=s8
dma5 nop wait=s18>=6,s17>=6,s16>=6,s15>=6 signal=s9
dma5 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in1@327680:f32[[512,32],[1,512]] mode=direct wait=s0>=14 signal=s9
dma6 nop wait=s18>=6,s17>=6,s16>=6,s15>=6 signal=s10
dma6 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in1@393216:f32[[512,32],[1,512]] mode=direct wait=s0>=14 signal=s10
dma7 nop wait=s18>=6,s17>=6,s16>=6,s15>=6 signal=s11
dma7 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in1@458752:f32[[512,32],[1,512]] mode=direct wait=s0>=14 signal=s11
tensor nop wait=s11>=7,s10>=9,s9>=9,s8>=9 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s4>=5,s5>=5,s6>=5,s7>=9 signal=s0
dma8 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@525312:f32[[1024,128],[1,32]] mode=transpose wait=s0>=18,s13>=5,s14>=5,s15>=8 signal=s12
dma9 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@525440:f32[[1024,128],[1,32]] mode=transpose wait=s0>=18,s12>=5,s14>=5,s15>=8 signal=s13
dma10 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@525568:f32[[1024,128],[1,32]] mode=transpose wait=s0>=18,s12>=5,s13>=5,s15>=8 signal=s14
dma11 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@525696:f32[[1024,128],[1,32]] mode=transpose wait=s0>=18,s12>=5,s13>=5,s14>=5 signal=s15
dma12 nop wait=s10>=7,s9>=7,s8>=7,s7>=7 signal=s16
dma12 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in1@524288:f32[[512,32],[1,512]] mode=direct wait=s0>=16 signal=s16
dma13 nop wait=s10>=7,s9>=7,s8>=7,s7>=7 signal=s17
dma13 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in1@589824:f32[[512,32],[1,512]] mode=direct wait=s0>=16 signal=s17
dma14 nop wait=s10>=7,s9>=7,s8>=7,s7>=7 signal=s18
dma14 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in1@655360:f32[[512,32],[1,512]] mode=direct wait=s0>=16 signal=s18
dma15 nop wait=s10>=7,s9>=7,s8>=7,s7>=7 signal=s19
dma15 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in1@720896:f32[[512,32],[1,512]] mode=direct wait=s0>=16 signal=s19
tensor nop wait=s19>=8,s18>=10,s17>=10,s16>=10 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s12>=6,s13>=6,s14>=6,s15>=9 signal=s0
dma0 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@525824:f32[[1024,128],[1,32]] mode=transpose wait=s0>=20,s5>=5,s6>=5,s7>=9 signal=s4
dma1 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@525952:f32[[1024,128],[1,32]] mode=transpose wait=s0>=20,s4>=5,s6>=5,s7>=9 signal=s5
dma2 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@526080:f32[[1024,128],[1,32]] mode=transpose wait=s0>=20,s4>=5,s5>=5,s7>=9 signal=s6
dma3 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@526208:f32[[1024,128],[1,32]] mode=transpose wait=s0>=20,s4>=5,s5>=5,s6>=5 signal=s7
dma4 nop wait=s19>=6,s18>=8,s17>=8,s16>=8 signal=s8
dma4 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in1@786432:f32[[512,32],[1,512]] mode=direct wait=s0>=18 signal=s8
dma5 nop wait=s19>=6,s18>=8,s17>=8,s16>=8 signal=s9
dma5 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in1@851968:f32[[512,32],[1,512]] mode=direct wait=s0>=18 signal=s9
dma6 nop wait=s19>=6,s18>=8,s17>=8,s16>=8 signal=s10
dma6 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in1@917504:f32[[512,32],[1,512]] mode=direct wait=s0>=18 signal=s10
dma7 nop wait=s19>=6,s18>=8,s17>=8,s16>=8 signal=s11
dma7 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in1@983040:f32[[512,32],[1,512]] mode=direct wait=s0>=18 signal=s11
tensor nop wait=s11>=9,s10>=11,s9>=11,s8>=11 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s4>=6,s5>=6,s6>=6,s7>=10 signal=s0
dma8 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@526336:f32[[1024,128],[1,32]] mode=transpose wait=s0>=22,s13>=6,s14>=6,s15>=9 signal=s12
dma9 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@526464:f32[[1024,128],[1,32]] mode=transpose wait=s0>=22,s12>=6,s14>=6,s15>=9 signal=s13
dma10 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@526592:f32[[1024,128],[1,32]] mode=transpose wait=s0>=22,s12>=6,s13>=6,s15>=9 signal=s14
dma11 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@526720:f32[[1024,128],[1,32]] mode=transpose wait=s0>=22,s12>=6,s13>=6,s14>=6 signal=s15
dma12 nop wait=s11>=7,s10>=9,s9>=9,s8>=9 signal=s16
dma12 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in1@1048576:f32[[512,32],[1,512]] mode=direct wait=s0>=20 signal=s16
dma13 nop wait=s11>=7,s10>=9,s9>=9,s8>=9 signal=s17
dma13 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in1@1114112:f32[[512,32],[1,512]] mode=direct wait=s0>=20 signal=s17
dma14 nop wait=s11>=7,s10>=9,s9>=9,s8>=9 signal=s18
dma14 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in1@1179648:f32[[512,32],[1,512]] mode=direct wait=s0>=20 signal=s18
dma15 nop wait=s11>=7,s10>=9,s9>=9,s8>=9 signal=s19
dma15 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in1@1245184:f32[[512,32],[1,512]] mode=direct wait=s0>=20 signal=s19
tensor nop wait=s19>=10,s18>=12,s17>=12,s16>=12 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s12>=7,s13>=7,s14>=7,s15>=10 signal=s0
dma0 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@526848:f32[[1024,128],[1,32]] mode=transpose wait=s0>=24,s5>=6,s6>=6,s7>=10 signal=s4
dma1 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@526976:f32[[1024,128],[1,32]] mode=transpose wait=s0>=24,s4>=6,s6>=6,s7>=10 signal=s5
dma2 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@527104:f32[[1024,128],[1,32]] mode=transpose wait=s0>=24,s4>=6,s5>=6,s7>=10 signal=s6
dma3 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@527232:f32[[1024,128],[1,32]] mode=transpose wait=s0>=24,s4>=6,s5>=6,s6>=6 signal=s7
dma4 nop wait=s19>=8,s18>=10,s17>=10,s16>=10 signal=s8
dma4 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in1@1310720:f32[[512,32],[1,512]] mode=direct wait=s0>=22 signal=s8
dma5 nop wait=s19>=8,s18>=10,s17>=10,s16>=10 signal=s9
dma5 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in1@1376256:f32[[512,32],[1,512]] mode=direct wait=s0>=22 signal=s9
dma6 nop wait=s19>=8,s18>=10,s17>=10,s16>=10 signal=s10
dma6 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in1@1441792:f32[[512,32],[1,512]] mode=direct wait=s0>=22 signal=s10
dma7 nop wait=s19>=8,s18>=10,s17>=10,s16>=10 signal=s11
dma7 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in1@1507328:f32[[512,32],[1,512]] mode=direct wait=s0>=22 signal=s11
tensor nop wait=s11>=11,s10>=13,s9>=13,s8>=13 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s4>=7,s5>=7,s6>=7,s7>=11 signal=s0
dma8 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@527360:f32[[1024,128],[1,32]] mode=transpose wait=s0>=26,s13>=7,s14>=7,s15>=10 signal=s12
dma9 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@527488:f32[[1024,128],[1,32]] mode=transpose wait=s0>=26,s12>=7,s14>=7,s15>=10 signal=s13
dma10 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@527616:f32[[1024,128],[1,32]] mode=transpose wait=s0>=26,s12>=7,s13>=7,s15>=10 signal=s14
dma11 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@527744:f32[[1024,128],[1,32]] mode=transpose wait=s0>=26,s12>=7,s13>=7,s14>=7 signal=s15
dma12 nop wait=s11>=9,s10>=11,s9>=11,s8>=11 signal=s16
dma12 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in1@1572864:f32[[512,32],[1,512]] mode=direct wait=s0>=24 signal=s16
dma13 nop wait=s11>=9,s10>=11,s9>=11,s8>=11 signal=s17
dma13 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in1@1638400:f32[[512,32],[1,512]] mode=direct wait=s0>=24 signal=s17
dma14 nop wait=s11>=9,s10>=11,s9>=11,s8>=11 signal=s18
dma14 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in1@1703936:f32[[512,32],[1,512]] mode=direct wait=s0>=24 signal=s18
dma15 nop wait=s11>=9,s10>=11,s9>=11,s8>=11 signal=s19
dma15 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in1@1769472:f32[[512,32],[1,512]] mode=direct wait=s0>=24 signal=s19
tensor nop wait=s19>=12,s18>=14,s17>=14,s16>=14 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s12>=8,s13>=8,s14>=8,s15>=11 signal=s0
dma0 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@527872:f32[[1024,128],[1,32]] mode=transpose wait=s0>=28,s5>=7,s6>=7,s7>=11 signal=s4
dma1 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@528000:f32[[1024,128],[1,32]] mode=transpose wait=s0>=28,s4>=7,s6>=7,s7>=11 signal=s5
dma2 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@528128:f32[[1024,128],[1,32]] mode=transpose wait=s0>=28,s4>=7,s5>=7,s7>=11 signal=s6
dma3 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@528256:f32[[1024,128],[1,32]] mode=transpose wait=s0>=28,s4>=7,s5>=7,s6>=7 signal=s7
dma4 nop wait=s19>=10,s18>=12,s17>=12,s16>=12 signal=s8
dma4 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in1@1835008:f32[[512,32],[1,512]] mode=direct wait=s0>=26 signal=s8
dma5 nop wait=s19>=10,s18>=12,s17>=12,s16>=12 signal=s9
dma5 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in1@1900544:f32[[512,32],[1,512]] mode=direct wait=s0>=26 signal=s9
dma6 nop wait=s19>=10,s18>=12,s17>=12,s16>=12 signal=s10
dma6 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in1@1966080:f32[[512,32],[1,512]] mode=direct wait=s0>=26 signal=s10
dma7 nop wait=s19>=10,s18>=12,s17>=12,s16>=12 signal=s11
dma7 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in1@2031616:f32[[512,32],[1,512]] mode=direct wait=s0>=26 signal=s11
tensor nop wait=s11>=13,s10>=15,s9>=15,s8>=15 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s4>=8,s5>=8,s6>=8,s7>=12 signal=s0
scalar activation dst=sbuf[0:128]@9216:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=32 signal=s2
dma8 dma_copy dst=hbm:t14@262144:f32[[512,128],[1,512]] src0=sbuf[0:128]@9216:f32[[1,512]] mode=direct wait=s2>=2 signal=s12
.collective all_reduce handle=27 group=0 size=2 dtype=f32 reduce=sum src=hbm:t14@0+524288 dst=hbm:t15@0+524288
.kernel k6_mm 20
dma9 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@0:f32[[1024,32],[1,128]] mode=direct signal=s13
dma10 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@131072:f32[[1024,32],[1,128]] mode=direct signal=s14
dma11 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@262144:f32[[1024,32],[1,128]] mode=direct signal=s15
dma12 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@393216:f32[[1024,32],[1,128]] mode=direct signal=s16
dma13 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in0@0:f32[[512,32],[1,512]] mode=direct signal=s17
dma14 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in0@65536:f32[[512,32],[1,512]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in0@131072:f32[[512,32],[1,512]] mode=direct signal=s19
dma0 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in0@196608:f32[[512,32],[1,512]] mode=direct signal=s4
tensor nop wait=s19>=1,s18>=1,s17>=1,s16>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=0 wait=s4>=1,s13>=1,s14>=1,s15>=1 signal=s0
dma1 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@524288:f32[[1024,32],[1,128]] mode=direct signal=s5
dma2 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@655360:f32[[1024,32],[1,128]] mode=direct signal=s6
dma3 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@786432:f32[[1024,32],[1,128]] mode=direct signal=s7
dma4 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@917504:f32[[1024,32],[1,128]] mode=direct signal=s8
dma5 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in0@262144:f32[[512,32],[1,512]] mode=direct signal=s9
dma6 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in0@327680:f32[[512,32],[1,512]] mode=direct signal=s10
dma7 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in0@393216:f32[[512,32],[1,512]] mode=direct signal=s11
dma8 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in0@458752:f32[[512,32],[1,512]] mode=direct signal=s12
tensor nop wait=s12>=1,s11>=1,s10>=1,s9>=1 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s5>=1,s6>=1,s7>=1,s8>=1 signal=s0
scalar activation dst=sbuf[0:128]@7168:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=4 signal=s2
dma9 dma_copy dst=hbm:out7@0:f32[[512,128],[1,512]] src0=sbuf[0:128]@7168:f32[[1,512]] mode=direct wait=s2>=1 signal=s13
dma10 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@512:f32[[1024,32],[1,128]] mode=direct wait=s0>=2,s13>=1,s15>=1,s16>=1 signal=s14
dma11 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@131584:f32[[1024,32],[1,128]] mode=direct wait=s0>=2,s13>=1,s14>=1,s16>=1 signal=s15
dma12 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@262656:f32[[1024,32],[1,128]] mode=direct wait=s0>=2,s13>=1,s14>=1,s15>=1 signal=s16
dma13 nop wait=s16>=1,s15>=1,s14>=1,s13>=1 signal=s17
dma13 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@393728:f32[[1024,32],[1,128]] mode=direct wait=s0>=2 signal=s17
dma14 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in0@0:f32[[512,32],[1,512]] mode=direct signal=s18
dma15 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in0@65536:f32[[512,32],[1,512]] mode=direct signal=s19
dma0 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in0@131072:f32[[512,32],[1,512]] mode=direct signal=s4
dma1 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in0@196608:f32[[512,32],[1,512]] mode=direct signal=s5
tensor nop wait=s19>=2,s18>=2,s17>=3,s16>=2 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=0 wait=s4>=2,s5>=2,s14>=2,s15>=2 signal=s0
dma2 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@524800:f32[[1024,32],[1,128]] mode=direct wait=s0>=4,s5>=1,s7>=1,s8>=1 signal=s6
dma3 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@655872:f32[[1024,32],[1,128]] mode=direct wait=s0>=4,s5>=1,s6>=1,s8>=1 signal=s7
dma4 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@786944:f32[[1024,32],[1,128]] mode=direct wait=s0>=4,s5>=1,s6>=1,s7>=1 signal=s8
dma5 nop wait=s8>=1,s7>=1,s6>=1,s5>=1 signal=s9
dma5 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@918016:f32[[1024,32],[1,128]] mode=direct wait=s0>=4 signal=s9
dma6 nop wait=s19>=1,s18>=1,s17>=1,s4>=1 signal=s10
dma6 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in0@262144:f32[[512,32],[1,512]] mode=direct wait=s0>=2 signal=s10
dma7 nop wait=s19>=1,s18>=1,s17>=1,s4>=1 signal=s11
dma7 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in0@327680:f32[[512,32],[1,512]] mode=direct wait=s0>=2 signal=s11
dma8 nop wait=s19>=1,s18>=1,s17>=1,s4>=1 signal=s12
dma8 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in0@393216:f32[[512,32],[1,512]] mode=direct wait=s0>=2 signal=s12
dma9 nop wait=s19>=1,s18>=1,s17>=1,s4>=1 signal=s13
dma9 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in0@458752:f32[[512,32],[1,512]] mode=direct wait=s0>=2 signal=s13
tensor nop wait=s13>=4,s12>=3,s11>=3,s10>=3 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s6>=2,s7>=2,s8>=2,s9>=3 signal=s0
scalar activation dst=sbuf[0:128]@9216:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=8 signal=s2
dma10 dma_copy dst=hbm:out7@262144:f32[[512,128],[1,512]] src0=sbuf[0:128]@9216:f32[[1,512]] mode=direct wait=s2>=2 signal=s14
dma11 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@1024:f32[[1024,32],[1,128]] mode=direct wait=s0>=6,s14>=2,s16>=2,s17>=3 signal=s15
dma12 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@132096:f32[[1024,32],[1,128]] mode=direct wait=s0>=6,s14>=2,s15>=2,s17>=3 signal=s16
dma13 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@263168:f32[[1024,32],[1,128]] mode=direct wait=s0>=6,s14>=2,s15>=2,s16>=2 signal=s17
dma14 nop wait=s17>=3,s16>=2,s15>=2,s14>=2 signal=s18
dma14 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@394240:f32[[1024,32],[1,128]] mode=direct wait=s0>=6 signal=s18
dma15 nop wait=s12>=1,s11>=1,s10>=1,s9>=1 signal=s19
dma15 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in0@0:f32[[512,32],[1,512]] mode=direct wait=s0>=4 signal=s19
dma0 nop wait=s12>=1,s11>=1,s10>=1,s9>=1 signal=s4
dma0 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in0@65536:f32[[512,32],[1,512]] mode=direct wait=s0>=4 signal=s4
dma1 nop wait=s12>=1,s11>=1,s10>=1,s9>=1 signal=s5
dma1 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in0@131072:f32[[512,32],[1,512]] mode=direct wait=s0>=4 signal=s5
dma2 nop wait=s12>=1,s11>=1,s10>=1,s9>=1 signal=s6
dma2 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in0@196608:f32[[512,32],[1,512]] mode=direct wait=s0>=4 signal=s6
tensor nop wait=s19>=4,s18>=4,s17>=4,s16>=3 signal=s0
tensor nop wait=s15>=3,s6>=4,s5>=4,s4>=4 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=0 wait=s2>=1 signal=s0
dma3 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@525312:f32[[1024,32],[1,128]] mode=direct wait=s0>=8,s6>=2,s8>=2,s9>=3 signal=s7
dma4 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@656384:f32[[1024,32],[1,128]] mode=direct wait=s0>=8,s6>=2,s7>=2,s9>=3 signal=s8
dma5 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@787456:f32[[1024,32],[1,128]] mode=direct wait=s0>=8,s6>=2,s7>=2,s8>=2 signal=s9
dma6 nop wait=s9>=3,s8>=2,s7>=2,s6>=2 signal=s10
dma6 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@918528:f32[[1024,32],[1,128]] mode=direct wait=s0>=8 signal=s10
dma7 nop wait=s19>=2,s18>=2,s5>=2,s4>=2 signal=s11
dma7 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in0@262144:f32[[512,32],[1,512]] mode=direct wait=s0>=6 signal=s11
dma8 nop wait=s19>=2,s18>=2,s5>=2,s4>=2 signal=s12
dma8 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in0@327680:f32[[512,32],[1,512]] mode=direct wait=s0>=6 signal=s12
dma9 nop wait=s19>=2,s18>=2,s5>=2,s4>=2 signal=s13
dma9 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in0@393216:f32[[512,32],[1,512]] mode=direct wait=s0>=6 signal=s13
dma10 nop wait=s19>=2,s18>=2,s5>=2,s4>=2 signal=s14
dma10 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in0@458752:f32[[512,32],[1,512]] mode=direct wait=s0>=6 signal=s14
tensor nop wait=s14>=5,s13>=6,s12>=5,s11>=5 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s7>=3,s8>=3,s9>=4,s10>=5 signal=s0
scalar activation dst=sbuf[0:128]@11264:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=13 signal=s2
dma11 dma_copy dst=hbm:out7@524288:f32[[512,128],[1,512]] src0=sbuf[0:128]@11264:f32[[1,512]] mode=direct wait=s2>=3 signal=s15
dma12 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@1536:f32[[1024,32],[1,128]] mode=direct wait=s0>=11,s15>=3,s17>=4,s18>=4 signal=s16
dma13 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@132608:f32[[1024,32],[1,128]] mode=direct wait=s0>=11,s15>=3,s16>=3,s18>=4 signal=s17
dma14 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@263680:f32[[1024,32],[1,128]] mode=direct wait=s0>=11,s15>=3,s16>=3,s17>=4 signal=s18
dma15 nop wait=s18>=4,s17>=4,s16>=3,s15>=3 signal=s19
dma15 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@394752:f32[[1024,32],[1,128]] mode=direct wait=s0>=11 signal=s19
dma0 nop wait=s13>=4,s12>=3,s11>=3,s10>=3 signal=s4
dma0 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in0@0:f32[[512,32],[1,512]] mode=direct wait=s0>=8 signal=s4
dma1 nop wait=s13>=4,s12>=3,s11>=3,s10>=3 signal=s5
dma1 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in0@65536:f32[[512,32],[1,512]] mode=direct wait=s0>=8 signal=s5
dma2 nop wait=s13>=4,s12>=3,s11>=3,s10>=3 signal=s6
dma2 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in0@131072:f32[[512,32],[1,512]] mode=direct wait=s0>=8 signal=s6
dma3 nop wait=s13>=4,s12>=3,s11>=3,s10>=3 signal=s7
dma3 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in0@196608:f32[[512,32],[1,512]] mode=direct wait=s0>=8 signal=s7
tensor nop wait=s19>=6,s18>=5,s17>=5,s16>=4 signal=s0
tensor nop wait=s7>=5,s6>=6,s5>=6,s4>=6 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=0 wait=s2>=2 signal=s0
dma4 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@525824:f32[[1024,32],[1,128]] mode=direct wait=s0>=13,s7>=3,s9>=4,s10>=5 signal=s8
dma5 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@656896:f32[[1024,32],[1,128]] mode=direct wait=s0>=13,s7>=3,s8>=3,s10>=5 signal=s9
dma6 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@787968:f32[[1024,32],[1,128]] mode=direct wait=s0>=13,s7>=3,s8>=3,s9>=4 signal=s10
dma7 nop wait=s10>=5,s9>=4,s8>=3,s7>=3 signal=s11
dma7 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@919040:f32[[1024,32],[1,128]] mode=direct wait=s0>=13 signal=s11
dma8 nop wait=s19>=4,s6>=4,s5>=4,s4>=4 signal=s12
dma8 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in0@262144:f32[[512,32],[1,512]] mode=direct wait=s0>=11 signal=s12
dma9 nop wait=s19>=4,s6>=4,s5>=4,s4>=4 signal=s13
dma9 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in0@327680:f32[[512,32],[1,512]] mode=direct wait=s0>=11 signal=s13
dma10 nop wait=s19>=4,s6>=4,s5>=4,s4>=4 signal=s14
dma10 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in0@393216:f32[[512,32],[1,512]] mode=direct wait=s0>=11 signal=s14
dma11 nop wait=s19>=4,s6>=4,s5>=4,s4>=4 signal=s15
dma11 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in0@458752:f32[[512,32],[1,512]] mode=direct wait=s0>=11 signal=s15
tensor nop wait=s15>=6,s14>=7,s13>=8,s12>=7 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s8>=4,s9>=5,s10>=6,s11>=7 signal=s0
scalar activation dst=sbuf[0:128]@7168:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=18,s13>=2 signal=s2
dma12 dma_copy dst=hbm:out7@786432:f32[[512,128],[1,512]] src0=sbuf[0:128]@7168:f32[[1,512]] mode=direct wait=s2>=4 signal=s16
dma13 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@2048:f32[[1024,32],[1,128]] mode=direct wait=s0>=16,s16>=4,s18>=5,s19>=6 signal=s17
dma14 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@133120:f32[[1024,32],[1,128]] mode=direct wait=s0>=16,s16>=4,s17>=5,s19>=6 signal=s18
dma15 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@264192:f32[[1024,32],[1,128]] mode=direct wait=s0>=16,s16>=4,s17>=5,s18>=5 signal=s19
dma0 nop wait=s19>=6,s18>=5,s17>=5,s16>=4 signal=s4
dma0 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@395264:f32[[1024,32],[1,128]] mode=direct wait=s0>=16 signal=s4
dma1 nop wait=s14>=5,s13>=6,s12>=5,s11>=5 signal=s5
dma1 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in0@0:f32[[512,32],[1,512]] mode=direct wait=s0>=13 signal=s5
dma2 nop wait=s14>=5,s13>=6,s12>=5,s11>=5 signal=s6
dma2 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in0@65536:f32[[512,32],[1,512]] mode=direct wait=s0>=13 signal=s6
dma3 nop wait=s14>=5,s13>=6,s12>=5,s11>=5 signal=s7
dma3 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in0@131072:f32[[512,32],[1,512]] mode=direct wait=s0>=13 signal=s7
dma4 nop wait=s14>=5,s13>=6,s12>=5,s11>=5 signal=s8
dma4 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in0@196608:f32[[512,32],[1,512]] mode=direct wait=s0>=13 signal=s8
tensor nop wait=s19>=7,s18>=6,s17>=6,s8>=6 signal=s0
tensor nop wait=s7>=7,s6>=8,s5>=8,s4>=8 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=0 wait=s2>=3 signal=s0
dma5 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@526336:f32[[1024,32],[1,128]] mode=direct wait=s0>=18,s8>=4,s10>=6,s11>=7 signal=s9
dma6 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@657408:f32[[1024,32],[1,128]] mode=direct wait=s0>=18,s8>=4,s9>=5,s11>=7 signal=s10
dma7 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@788480:f32[[1024,32],[1,128]] mode=direct wait=s0>=18,s8>=4,s9>=5,s10>=6 signal=s11
dma8 nop wait=s11>=7,s10>=6,s9>=5,s8>=4 signal=s12
dma8 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@919552:f32[[1024,32],[1,128]] mode=direct wait=s0>=18 signal=s12
dma9 nop wait=s7>=5,s6>=6,s5>=6,s4>=6 signal=s13
dma9 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in0@262144:f32[[512,32],[1,512]] mode=direct wait=s0>=16 signal=s13
dma10 nop wait=s7>=5,s6>=6,s5>=6,s4>=6 signal=s14
dma10 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in0@327680:f32[[512,32],[1,512]] mode=direct wait=s0>=16 signal=s14
dma11 nop wait=s7>=5,s6>=6,s5>=6,s4>=6 signal=s15
dma11 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in0@393216:f32[[512,32],[1,512]] mode=direct wait=s0>=16 signal=s15
dma12 nop wait=s7>=5,s6>=6,s5>=6,s4>=6 signal=s16
dma12 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in0@458752:f32[[512,32],[1,512]] mode=direct wait=s0>=16 signal=s16
tensor nop wait=s16>=7,s15>=8,s14>=9,s13>=10 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s9>=6,s10>=7,s11>=8,s12>=9 signal=s0
scalar activation dst=sbuf[0:128]@9216:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=23,s14>=3 signal=s2
dma13 dma_copy dst=hbm:out7@1048576:f32[[512,128],[1,512]] src0=sbuf[0:128]@9216:f32[[1,512]] mode=direct wait=s2>=5 signal=s17
dma14 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@2560:f32[[1024,32],[1,128]] mode=direct wait=s0>=21,s4>=8,s17>=6,s19>=7 signal=s18
dma15 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@133632:f32[[1024,32],[1,128]] mode=direct wait=s0>=21,s4>=8,s17>=6,s18>=6 signal=s19
dma0 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@264704:f32[[1024,32],[1,128]] mode=direct wait=s0>=21,s17>=6,s18>=6,s19>=7 signal=s4
dma1 nop wait=s19>=7,s18>=6,s17>=6,s4>=8 signal=s5
dma1 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@395776:f32[[1024,32],[1,128]] mode=direct wait=s0>=21 signal=s5
dma2 nop wait=s15>=6,s14>=7,s13>=8,s12>=7 signal=s6
dma2 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in0@0:f32[[512,32],[1,512]] mode=direct wait=s0>=18 signal=s6
dma3 nop wait=s15>=6,s14>=7,s13>=8,s12>=7 signal=s7
dma3 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in0@65536:f32[[512,32],[1,512]] mode=direct wait=s0>=18 signal=s7
dma4 nop wait=s15>=6,s14>=7,s13>=8,s12>=7 signal=s8
dma4 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in0@131072:f32[[512,32],[1,512]] mode=direct wait=s0>=18 signal=s8
dma5 nop wait=s15>=6,s14>=7,s13>=8,s12>=7 signal=s9
dma5 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in0@196608:f32[[512,32],[1,512]] mode=direct wait=s0>=18 signal=s9
tensor nop wait=s19>=8,s18>=7,s9>=8,s8>=8 signal=s0
tensor nop wait=s7>=9,s6>=10,s5>=10,s4>=9 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=0 wait=s2>=4 signal=s0
dma6 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@526848:f32[[1024,32],[1,128]] mode=direct wait=s0>=23,s9>=6,s11>=8,s12>=9 signal=s10
dma7 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@657920:f32[[1024,32],[1,128]] mode=direct wait=s0>=23,s9>=6,s10>=7,s12>=9 signal=s11
dma8 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@788992:f32[[1024,32],[1,128]] mode=direct wait=s0>=23,s9>=6,s10>=7,s11>=8 signal=s12
dma9 nop wait=s12>=9,s11>=8,s10>=7,s9>=6 signal=s13
dma9 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@920064:f32[[1024,32],[1,128]] mode=direct wait=s0>=23 signal=s13
dma10 nop wait=s8>=6,s7>=7,s6>=8,s5>=8 signal=s14
dma10 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in0@262144:f32[[512,32],[1,512]] mode=direct wait=s0>=21 signal=s14
dma11 nop wait=s8>=6,s7>=7,s6>=8,s5>=8 signal=s15
dma11 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in0@327680:f32[[512,32],[1,512]] mode=direct wait=s0>=21 signal=s15
dma12 nop wait=s8>=6,s7>=7,s6>=8,s5>=8 signal=s16
dma12 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in0@393216:f32[[512,32],[1,512]] mode=direct wait=s0>=21 signal=s16
dma13 nop wait=s8>=6,s7>=7,s6>=8,s5>=8 signal=s17
dma13 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in0@458752:f32[[512,32],[1,512]] mode=direct wait=s0>=21 signal=s17
tensor nop wait=s17>=9,s16>=9,s15>=10,s14>=11 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=1 wait=s10>=8,s11>=9,s12>=10,s13>=12 signal=s0
scalar activation dst=sbuf[0:128]@11264:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=28,s15>=4 signal=s2
dma14 dma_copy dst=hbm:out7@1310720:f32[[512,128],[1,512]] src0=sbuf[0:128]@11264:f32[[1,512]] mode=direct wait=s2>=6 signal=s18
dma15 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@3072:f32[[1024,32],[1,128]] mode=direct wait=s0>=26,s4>=9,s5>=10,s18>=7 signal=s19
dma0 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@134144:f32[[1024,32],[1,128]] mode=direct wait=s0>=26,s5>=10,s18>=7,s19>=8 signal=s4
dma1 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@265216:f32[[1024,32],[1,128]] mode=direct wait=s0>=26,s4>=9,s18>=7,s19>=8 signal=s5
dma2 nop wait=s19>=8,s18>=7,s5>=10,s4>=9 signal=s6
dma2 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@396288:f32[[1024,32],[1,128]] mode=direct wait=s0>=26 signal=s6
dma3 nop wait=s16>=7,s15>=8,s14>=9,s13>=10 signal=s7
dma3 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in0@0:f32[[512,32],[1,512]] mode=direct wait=s0>=23 signal=s7
dma4 nop wait=s16>=7,s15>=8,s14>=9,s13>=10 signal=s8
dma4 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in0@65536:f32[[512,32],[1,512]] mode=direct wait=s0>=23 signal=s8
dma5 nop wait=s16>=7,s15>=8,s14>=9,s13>=10 signal=s9
dma5 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in0@131072:f32[[512,32],[1,512]] mode=direct wait=s0>=23 signal=s9
dma6 nop wait=s16>=7,s15>=8,s14>=9,s13>=10 signal=s10
dma6 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in0@196608:f32[[512,32],[1,512]] mode=direct wait=s0>=23 signal=s10
tensor nop wait=s19>=9,s10>=10,s9>=10,s8>=10 signal=s0
tensor nop wait=s7>=11,s6>=12,s5>=11,s4>=10 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=0 wait=s2>=5 signal=s0
dma7 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@527360:f32[[1024,32],[1,128]] mode=direct wait=s0>=28,s10>=8,s12>=10,s13>=12 signal=s11
dma8 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@658432:f32[[1024,32],[1,128]] mode=direct wait=s0>=28,s10>=8,s11>=9,s13>=12 signal=s12
dma9 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@789504:f32[[1024,32],[1,128]] mode=direct wait=s0>=28,s10>=8,s11>=9,s12>=10 signal=s13
dma10 nop wait=s13>=12,s12>=10,s11>=9,s10>=8 signal=s14
dma10 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@920576:f32[[1024,32],[1,128]] mode=direct wait=s0>=28 signal=s14
dma11 nop wait=s9>=8,s8>=8,s7>=9,s6>=10 signal=s15
dma11 dma_copy dst=sbuf[0:32]@3072:f32[[1,512]] src0=hbm:in0@262144:f32[[512,32],[1,512]] mode=direct wait=s0>=26 signal=s15
dma12 nop wait=s9>=8,s8>=8,s7>=9,s6>=10 signal=s16
dma12 dma_copy dst=sbuf[32:32]@3072:f32[[1,512]] src0=hbm:in0@327680:f32[[512,32],[1,512]] mode=direct wait=s0>=26 signal=s16
dma13 nop wait=s9>=8,s8>=8,s7>=9,s6>=10 signal=s17
dma13 dma_copy dst=sbuf[64:32]@3072:f32[[1,512]] src0=hbm:in0@393216:f32[[512,32],[1,512]] mode=direct wait=s0>=26 signal=s17
dma14 nop wait=s9>=8,s8>=8,s7>=9,s6>=10 signal=s18
dma14 dma_copy dst=sbuf[96:32]@3072:f32[[1,512]] src0=hbm:in0@458752:f32[[512,32],[1,512]] mode=direct wait=s0>=26 signal=s18
tensor nop wait=s18>=10,s17>=11,s16>=11,s15>=12 signal=s0
tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@3072:f32[[1,512]] acc=1 wait=s11>=10,s12>=11,s13>=13,s14>=13 signal=s0
scalar activation dst=sbuf[0:128]@7168:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=33,s16>=5 signal=s2
dma15 dma_copy dst=hbm:out7@1572864:f32[[512,128],[1,512]] src0=sbuf[0:128]@7168:f32[[1,512]] mode=direct wait=s2>=7 signal=s19
dma0 dma_copy dst=sbuf[0:32]@0:f32[[1,128]] src0=hbm:t13@3584:f32[[1024,32],[1,128]] mode=direct wait=s0>=31,s5>=11,s6>=12,s19>=9 signal=s4
dma1 dma_copy dst=sbuf[32:32]@0:f32[[1,128]] src0=hbm:t13@134656:f32[[1024,32],[1,128]] mode=direct wait=s0>=31,s4>=10,s6>=12,s19>=9 signal=s5
dma2 dma_copy dst=sbuf[64:32]@0:f32[[1,128]] src0=hbm:t13@265728:f32[[1024,32],[1,128]] mode=direct wait=s0>=31,s4>=10,s5>=11,s19>=9 signal=s6
dma3 nop wait=s19>=9,s6>=12,s5>=11,s4>=10 signal=s7
dma3 dma_copy dst=sbuf[96:32]@0:f32[[1,128]] src0=hbm:t13@396800:f32[[1024,32],[1,128]] mode=direct wait=s0>=31 signal=s7
dma4 nop wait=s17>=9,s16>=9,s15>=10,s14>=11 signal=s8
dma4 dma_copy dst=sbuf[0:32]@5120:f32[[1,512]] src0=hbm:in0@0:f32[[512,32],[1,512]] mode=direct wait=s0>=28 signal=s8
dma5 nop wait=s17>=9,s16>=9,s15>=10,s14>=11 signal=s9
dma5 dma_copy dst=sbuf[32:32]@5120:f32[[1,512]] src0=hbm:in0@65536:f32[[512,32],[1,512]] mode=direct wait=s0>=28 signal=s9
dma6 nop wait=s17>=9,s16>=9,s15>=10,s14>=11 signal=s10
dma6 dma_copy dst=sbuf[64:32]@5120:f32[[1,512]] src0=hbm:in0@131072:f32[[512,32],[1,512]] mode=direct wait=s0>=28 signal=s10
dma7 nop wait=s17>=9,s16>=9,s15>=10,s14>=11 signal=s11
dma7 dma_copy dst=sbuf[96:32]@5120:f32[[1,512]] src0=hbm:in0@196608:f32[[512,32],[1,512]] mode=direct wait=s0>=28 signal=s11
tensor nop wait=s11>=12,s10>=12,s9>=12,s8>=12 signal=s0
tensor nop wait=s7>=13,s6>=13,s5>=12,s4>=11 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@0:f32[[1,128]] src1=sbuf[0:128]@5120:f32[[1,512]] acc=0 wait=s2>=6 signal=s0
dma8 dma_copy dst=sbuf[0:32]@512:f32[[1,128]] src0=hbm:t13@527872:f32[[1024,32],[1,128]] mode=direct wait=s0>=33,s11>=10,s13>=13,s14>=13 signal=s12
dma9 dma_copy dst=sbuf[32:32]@512:f32[[1,128]] src0=hbm:t13@658944:f32[[1024,32],[1,128]] mode=direct wait=s0>=33,s11>=10,s12>=11,s14>=13 signal=s13
dma10 dma_copy dst=sbuf[64:32]@512:f32[[1,128]] src0=hbm:t13@790016:f32[[1024,32],[1,128]] mode=direct wait=s0>=33,s11>=10,s12>=11,s13>=13 signal=s14
dma11 nop wait=s14>=13,s13>=13,s12>=11,s11>=10 signal=s15
dma11 dma_copy dst=sbuf[96:32]@512:f32[[1,128]] src0=hbm:t13@921088:f32[[1024,32],[1,128]] mode=direct wait=s0>=33 signal=s15
dma12 nop wait=s10>=10,s9>=10,s8>=10,s7>=11 signal=s16
dma12 dma_copy dst=sbuf[0:32]@1024:f32[[1,512]] src0=hbm:in0@262144:f32[[512,32],[1,512]] mode=direct wait=s0>=31 signal=s16
dma13 nop wait=s10>=10,s9>=10,s8>=10,s7>=11 signal=s17
dma13 dma_copy dst=sbuf[32:32]@1024:f32[[1,512]] src0=hbm:in0@327680:f32[[512,32],[1,512]] mode=direct wait=s0>=31 signal=s17
dma14 nop wait=s10>=10,s9>=10,s8>=10,s7>=11 signal=s18
dma14 dma_copy dst=sbuf[64:32]@1024:f32[[1,512]] src0=hbm:in0@393216:f32[[512,32],[1,512]] mode=direct wait=s0>=31 signal=s18
dma15 nop wait=s10>=10,s9>=10,s8>=10,s7>=11 signal=s19
dma15 dma_copy dst=sbuf[96:32]@1024:f32[[1,512]] src0=hbm:in0@458752:f32[[512,32],[1,512]] mode=direct wait=s0>=31 signal=s19
tensor nop wait=s19>=12,s18>=12,s17>=13,s16>=13 signal=s0
tensor matmul dst=psum[0:128]@2048:f32[[1,512]] src0=sbuf[0:128]@512:f32[[1,128]] src1=sbuf[0:128]@1024:f32[[1,512]] acc=1 wait=s12>=12,s13>=14,s14>=14,s15>=14 signal=s0
scalar activation dst=sbuf[0:128]@9216:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] func=identity imm0=1 imm1=0 wait=s0>=38,s17>=7 signal=s2
dma0 dma_copy dst=hbm:out7@1835008:f32[[512,128],[1,512]] src0=sbuf[0:128]@9216:f32[[1,512]] mode=direct wait=s2>=8 signal=s4
.kernel k7_sum 20
dma1 dma_copy dst=sbuf[0:128]@0:f32[[1,256]] src0=hbm:t13@0:f32[[1,128],[1024,256]] mode=direct signal=s5
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@0:f32[[1,256]] op=add axes=1 wait=s5>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49280:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 signal=s1
dma2 dma_copy dst=hbm:t16@0:f32[[1,128],[1,1]] src0=sbuf[0:128]@49280:f32[[1,1]] mode=direct wait=s1>=2 signal=s6
dma3 dma_copy dst=sbuf[0:128]@16384:f32[[1,256]] src0=hbm:t13@512:f32[[1,128],[1024,256]] mode=direct signal=s7
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@16384:f32[[1,256]] op=add axes=1 wait=s7>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49344:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 signal=s1
dma4 dma_copy dst=hbm:t16@512:f32[[1,128],[1,1]] src0=sbuf[0:128]@49344:f32[[1,1]] mode=direct wait=s1>=4 signal=s8
dma5 dma_copy dst=sbuf[0:128]@32768:f32[[1,256]] src0=hbm:t13@1024:f32[[1,128],[1024,256]] mode=direct signal=s9
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@32768:f32[[1,256]] op=add axes=1 wait=s9>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49280:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 wait=s6>=1 signal=s1
dma6 dma_copy dst=hbm:t16@1024:f32[[1,128],[1,1]] src0=sbuf[0:128]@49280:f32[[1,1]] mode=direct wait=s1>=6 signal=s10
dma7 dma_copy dst=sbuf[0:128]@0:f32[[1,256]] src0=hbm:t13@1536:f32[[1,128],[1024,256]] mode=direct wait=s1>=1,s5>=1 signal=s11
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@0:f32[[1,256]] op=add axes=1 wait=s11>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49344:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 wait=s8>=1 signal=s1
dma8 dma_copy dst=hbm:t16@1536:f32[[1,128],[1,1]] src0=sbuf[0:128]@49344:f32[[1,1]] mode=direct wait=s1>=8 signal=s12
dma9 dma_copy dst=sbuf[0:128]@16384:f32[[1,256]] src0=hbm:t13@2048:f32[[1,128],[1024,256]] mode=direct wait=s1>=3,s7>=1 signal=s13
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@16384:f32[[1,256]] op=add axes=1 wait=s13>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49280:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 wait=s10>=1 signal=s1
dma10 dma_copy dst=hbm:t16@2048:f32[[1,128],[1,1]] src0=sbuf[0:128]@49280:f32[[1,1]] mode=direct wait=s1>=10 signal=s14
dma11 dma_copy dst=sbuf[0:128]@32768:f32[[1,256]] src0=hbm:t13@2560:f32[[1,128],[1024,256]] mode=direct wait=s1>=5,s9>=1 signal=s15
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@32768:f32[[1,256]] op=add axes=1 wait=s15>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49344:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 wait=s12>=1 signal=s1
dma12 dma_copy dst=hbm:t16@2560:f32[[1,128],[1,1]] src0=sbuf[0:128]@49344:f32[[1,1]] mode=direct wait=s1>=12 signal=s16
dma13 dma_copy dst=sbuf[0:128]@0:f32[[1,256]] src0=hbm:t13@3072:f32[[1,128],[1024,256]] mode=direct wait=s1>=7,s11>=1 signal=s17
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@0:f32[[1,256]] op=add axes=1 wait=s17>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49280:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 wait=s14>=1 signal=s1
dma14 dma_copy dst=hbm:t16@3072:f32[[1,128],[1,1]] src0=sbuf[0:128]@49280:f32[[1,1]] mode=direct wait=s1>=14 signal=s18
dma15 dma_copy dst=sbuf[0:128]@16384:f32[[1,256]] src0=hbm:t13@3584:f32[[1,128],[1024,256]] mode=direct wait=s1>=9,s13>=1 signal=s19
vector tensor_reduce dst=sbuf[0:128]@49536:f32[[1,1]] src0=sbuf[0:128]@16384:f32[[1,256]] op=add axes=1 wait=s19>=1 signal=s1
vector tensor_scalar dst=sbuf[0:128]@49344:f32[[1,1]] src0=sbuf[0:128]@49536:f32[[1,1]] op=bypass op1=bypass imm0=0 imm1=0 wait=s16>=1 signal=s1
dma0 dma_copy dst=hbm:t16@3584:f32[[1,128],[1,1]] src0=sbuf[0:128]@49344:f32[[1,1]] mode=direct wait=s1>=16 signal=s4
.collective cc_wait handle=27
.kernel k9_output_copy 20
dma1 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t15@0:f32[[0,1],[1,8192]] mode=direct signal=s5
dma2 dma_copy dst=hbm:out6@0:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s5>=1 signal=s6
dma3 dma_copy dst=sbuf[0:1]@32768:f32[[1,8192]] src0=hbm:t15@32768:f32[[0,1],[1,8192]] mode=direct signal=s7
dma4 dma_copy dst=hbm:out6@32768:f32[[0,1],[1,8192]] src0=sbuf[0:1]@32768:f32[[1,8192]] mode=direct wait=s7>=1 signal=s8
dma5 dma_copy dst=sbuf[0:1]@65536:f32[[1,8192]] src0=hbm:t15@65536:f32[[0,1],[1,8192]] mode=direct signal=s9
dma6 dma_copy dst=hbm:out6@65536:f32[[0,1],[1,8192]] src0=sbuf[0:1]@65536:f32[[1,8192]] mode=direct wait=s9>=1 signal=s10
dma7 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t15@98304:f32[[0,1],[1,8192]] mode=direct wait=s5>=1,s6>=1 signal=s11
dma8 dma_copy dst=hbm:out6@98304:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s11>=1 signal=s12
dma9 dma_copy dst=sbuf[0:1]@32768:f32[[1,8192]] src0=hbm:t15@131072:f32[[0,1],[1,8192]] mode=direct wait=s7>=1,s8>=1 signal=s13
dma10 dma_copy dst=hbm:out6@131072:f32[[0,1],[1,8192]] src0=sbuf[0:1]@32768:f32[[1,8192]] mode=direct wait=s13>=1 signal=s14
dma11 dma_copy dst=sbuf[0:1]@65536:f32[[1,8192]] src0=hbm:t15@163840:f32[[0,1],[1,8192]] mode=direct wait=s9>=1,s10>=1 signal=s15
dma12 dma_copy dst=hbm:out6@163840:f32[[0,1],[1,8192]] src0=sbuf[0:1]@65536:f32[[1,8192]] mode=direct wait=s15>=1 signal=s16
dma13 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t15@196608:f32[[0,1],[1,8192]] mode=direct wait=s11>=1,s12>=1 signal=s17
dma14 dma_copy dst=hbm:out6@196608:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s17>=1 signal=s18
dma15 dma_copy dst=sbuf[0:1]@32768:f32[[1,8192]] src0=hbm:t15@229376:f32[[0,1],[1,8192]] mode=direct wait=s13>=1,s14>=1 signal=s19
dma0 dma_copy dst=hbm:out6@229376:f32[[0,1],[1,8192]] src0=sbuf[0:1]@32768:f32[[1,8192]] mode=direct wait=s19>=1 signal=s4
dma1 dma_copy dst=sbuf[0:1]@65536:f32[[1,8192]] src0=hbm:t15@262144:f32[[0,1],[1,8192]] mode=direct wait=s15>=1,s16>=1 signal=s5
dma2 dma_copy dst=hbm:out6@262144:f32[[0,1],[1,8192]] src0=sbuf[0:1]@65536:f32[[1,8192]] mode=direct wait=s5>=2 signal=s6
dma3 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t15@294912:f32[[0,1],[1,8192]] mode=direct wait=s17>=1,s18>=1 signal=s7
dma4 dma_copy dst=hbm:out6@294912:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s7>=2 signal=s8
dma5 dma_copy dst=sbuf[0:1]@32768:f32[[1,8192]] src0=hbm:t15@327680:f32[[0,1],[1,8192]] mode=direct wait=s4>=1,s19>=1 signal=s9
dma6 dma_copy dst=hbm:out6@327680:f32[[0,1],[1,8192]] src0=sbuf[0:1]@32768:f32[[1,8192]] mode=direct wait=s9>=2 signal=s10
dma7 dma_copy dst=sbuf[0:1]@65536:f32[[1,8192]] src0=hbm:t15@360448:f32[[0,1],[1,8192]] mode=direct wait=s5>=2,s6>=2 signal=s11
dma8 dma_copy dst=hbm:out6@360448:f32[[0,1],[1,8192]] src0=sbuf[0:1]@65536:f32[[1,8192]] mode=direct wait=s11>=2 signal=s12
dma9 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t15@393216:f32[[0,1],[1,8192]] mode=direct wait=s7>=2,s8>=2 signal=s13
dma10 dma_copy dst=hbm:out6@393216:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s13>=2 signal=s14
dma11 dma_copy dst=sbuf[0:1]@32768:f32[[1,8192]] src0=hbm:t15@425984:f32[[0,1],[1,8192]] mode=direct wait=s9>=2,s10>=2 signal=s15
dma12 dma_copy dst=hbm:out6@425984:f32[[0,1],[1,8192]] src0=sbuf[0:1]@32768:f32[[1,8192]] mode=direct wait=s15>=2 signal=s16
dma13 dma_copy dst=sbuf[0:1]@65536:f32[[1,8192]] src0=hbm:t15@458752:f32[[0,1],[1,8192]] mode=direct wait=s11>=2,s12>=2 signal=s17
dma14 dma_copy dst=hbm:out6@458752:f32[[0,1],[1,8192]] src0=sbuf[0:1]@65536:f32[[1,8192]] mode=direct wait=s17>=2 signal=s18
dma15 dma_copy dst=sbuf[0:1]@0:f32[[1,8192]] src0=hbm:t15@491520:f32[[0,1],[1,8192]] mode=direct wait=s13>=2,s14>=2 signal=s19
dma0 dma_copy dst=hbm:out6@491520:f32[[0,1],[1,8192]] src0=sbuf[0:1]@0:f32[[1,8192]] mode=direct wait=s19>=2 signal=s4
.kernel k10_output_copy 20
dma1 dma_copy dst=sbuf[0:1]@0:f32[[1,1024]] src0=hbm:t16@0:f32[[0,1],[1,1024]] mode=direct signal=s5
dma2 dma_copy dst=hbm:out8@0:f32[[0,1],[1,1024]] src0=sbuf[0:1]@0:f32[[1,1024]] mode=direct wait=s5>=1 signal=s6
.kernel k11_output_copy 20
dma3 dma_copy dst=sbuf[0:1]@0:f32[[1,512]] src0=hbm:t12@0:f32[[0,1],[1,512]] mode=direct signal=s7
dma4 dma_copy dst=hbm:out10@0:f32[[0,1],[1,512]] src0=sbuf[0:1]@0:f32[[1,512]] mode=direct wait=s7>=1 signal=s8
