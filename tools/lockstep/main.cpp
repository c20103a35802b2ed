#include <iostream>
int main() { std::cerr << "lockstep: not implemented yet\n"; return 1; }
