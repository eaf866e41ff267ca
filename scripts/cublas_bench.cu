/* cuBLAS's sgemm on a row-major M x K by K x N product, the peer of smelt's
 * tiled MatMuls in scripts/cuda_device_check.py: FP32 arithmetic (the
 * default math mode: no TF32 tensor cores), operands on the device, CUDA
 * events around each call; prints "cublas_ms MEDIAN gflops G".
 *   usage: cublas_bench M N K RUNS        (nvcc -O2 -o cublas_bench cublas_bench.cu -lcublas) */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

static __global__ void fill(float *x, long long n, float scale)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = (float)((i * 7919) % 1000) * scale - 0.5f;
}

static int cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

#define CK(x)                                                                           \
    do {                                                                                \
        if ((x) != 0) {                                                                 \
            fprintf(stderr, "%s failed (%d)\n", #x, (int)(x));                          \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s M N K RUNS\n", argv[0]);
        return 2;
    }
    int m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]), runs = atoi(argv[4]);
    if (m < 1 || n < 1 || k < 1 || runs < 1) return 2;
    float *a, *b, *c, one = 1, zero = 0;
    CK(cudaMalloc((void **)&a, sizeof(float) * (size_t)m * k));
    CK(cudaMalloc((void **)&b, sizeof(float) * (size_t)k * n));
    CK(cudaMalloc((void **)&c, sizeof(float) * (size_t)m * n));
    fill<<<(m * k + 255) / 256, 256>>>(a, (long long)m * k, 1e-3f);
    fill<<<(k * n + 255) / 256, 256>>>(b, (long long)k * n, 1e-3f);
    cublasHandle_t h;
    CK(cublasCreate(&h));
    CK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float *ms = (float *)malloc(sizeof(float) * runs);
    for (int r = -3; r < runs; r++) {
        /* row-major C = A B is column-major C' = B' A' */
        CK(cudaEventRecord(e0, 0));
        CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n));
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        if (r >= 0) CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    qsort(ms, runs, sizeof(float), cmp);
    double med = ms[runs / 2];
    printf("cublas_ms %.4f gflops %.1f\n", med, 2.0 * m * n * k / (med * 1e6));
    cublasDestroy(h);
    return 0;
}
