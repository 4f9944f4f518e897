pragma circom 2.2.0;

// Test circuit for cuzk.r1cs.witness (tests/test_witness.py). It exercises every input shape the
// calculator must qualify: a scalar, a 2-D array, a bus (p.x), an array of buses (q[1].y), a bus
// nested in a bus (s.b.x) with an array field (s.w), plus a sub-component, an `===` assert that
// the inputs can violate, and a log() line.

bus Point() {
    signal x;
    signal y;
}

bus Seg() {
    Point() a;
    Point() b;
    signal w[2];
}

template Mul() {
    signal input a;
    signal input b;
    signal output c;
    c <== a * b;
}

template WitnessTest(n) {
    signal input x;
    signal input arr[2][3];
    input Point() p;
    input Point() q[2];
    input Seg() s;
    signal input sum;
    signal output out;
    signal output prod;

    // sum must equal x + p.y: violating it fails the assert in the witness generator
    sum === x + p.y;

    component m = Mul();
    m.a <== p.x;
    m.b <== q[1].y;

    signal acc[n];
    acc[0] <== arr[0][0] * x;
    for (var i = 1; i < n; i++) {
        acc[i] <== acc[i - 1] * arr[i \ 3][i % 3] + i;
    }
    prod <== acc[n - 1];

    signal t[4];
    t[0] <== m.c * s.b.x;
    t[1] <== s.a.y * s.b.y;
    t[2] <== q[0].y * q[1].x;
    t[3] <== s.a.x * s.w[0];
    out <== t[0] + t[1] + t[2] + t[3] + s.w[1] + q[0].x;
    log("out", out);
}

component main = WitnessTest(6);
