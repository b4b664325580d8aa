import OATCore
import COATFFmpeg
import COATFFmpegLazy

// AudioConverter: decoded frames into the output FIFO (priming and remainder trimming,
// sample formats, channel maps, libswresample rate conversion).
extension AudioConverter {
    /// Of `decoded` frames just decoded, drops the priming frames still to skip at the start
    /// and what lies past the valid length (``limitRemainingFrames(_:)``), and counts the rest
    /// as decoded: the frames skipped at the start and the frames kept (nil: none kept).
    func trim(decoded: Int64) -> (skip: Int64, count: Int64)? {
        var count = decoded
        guard count > 0 else { return nil }
        var skip: Int64 = 0
        if leadingLeft > 0 {
            skip = Swift.min(leadingLeft, count)
            leadingLeft -= skip
            count -= skip
        }
        if let valid = validFrameCount { count = Swift.max(0, Swift.min(count, valid - decodedFrameCount)) }
        guard count > 0 else { return nil }
        decodedFrameCount += count
        return (skip, count)
    }

    /// Appends decoded interleaved Float32 samples at the destination's rate and channel count,
    /// trimming priming and remainder frames like ``convert(_:)``.
    func appendInterleavedFloat(_ samples: UnsafeBufferPointer<Float>, channels: Int) {
        guard let base = samples.baseAddress, channels > 0,
              let kept = trim(decoded: Int64(samples.count / channels)) else { return }
        let (skip, count) = kept
        let start = base + Int(skip) * channels
        let frames = Int(count)
        if outPlanes == 1 {
            var done = 0
            if let d = direct, d.filled < d.capacity {
                // Straight into the caller's buffer (fillComplexBuffer), as far as it has room.
                done = Swift.min(frames, d.capacity - d.filled)
                (d.base + d.filled * outBytesPerFrame).copyMemory(from: start, byteCount: done * channels * 4)
                direct!.filled += done
            }
            if done < frames {
                fifo[0].append(UnsafeRawBufferPointer(start: start + done * channels, count: (frames - done) * channels * 4))
            }
            return
        }
        appendDeinterleaved(start, frames: frames, channels: channels)
    }

    func receiveFrames() throws(AudioError) {
        guard let codec, let frame else { return }
        while true {
            let status = avcodec_receive_frame(codec, frame)
            if status == oat_averror_eagain() || status == oat_averror_eof() { return }
            if status < 0 {
                skippedPacketCount += 1
                lastDecodeError = AudioError(.invalidData, component: component, "decoding failed", underlying: CodecMapping.errorText(status))
                return
            }
            defer { av_frame_unref(frame) }
            try convert(frame)
        }
    }

    func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws(AudioError) {
        guard let kept = trim(decoded: Int64(frame.pointee.nb_samples)) else { return }
        let (skip, count) = kept
        let channels = frame.pointee.ch_layout.nb_channels
        let format = frame.pointee.format
        let rate = frame.pointee.sample_rate
        if channelMap == nil && Double(rate) == destinationFormat.sampleRate && Int32(destinationFormat.channelsPerFrame) == channels
            && (format == AV_SAMPLE_FMT_FLTP.rawValue || format == AV_SAMPLE_FMT_FLT.rawValue)
            && (outFormat == AV_SAMPLE_FMT_FLT || outFormat == AV_SAMPLE_FMT_FLTP) {
            // Float32 at the output's rate and channel count: only (de)interleaving is left, done
            // here without libswresample.
            if swr != nil { flushResampler(); swr_free(&swr); swrInput = nil }
            copyFloat(frame, skip: Int(skip), frames: Int(count), channels: Int(channels), planar: format == AV_SAMPLE_FMT_FLTP.rawValue)
            return
        }
        if channelMap == nil && Double(rate) == destinationFormat.sampleRate && Int32(destinationFormat.channelsPerFrame) == channels
            && (outFormat == AV_SAMPLE_FMT_FLT || outFormat == AV_SAMPLE_FMT_FLTP),
            let sampleBits = Self.integerSampleBits(format) {
            // 16- or 32-bit integers (FLAC, ALAC, PCM decoders) to Float32 at the same rate and
            // channel count: scaled and (de)interleaved straight into the FIFO, as libswresample
            // would (x / 2^15 or x / 2^31), without its intermediate buffer.
            if swr != nil { flushResampler(); swr_free(&swr); swrInput = nil }
            let planar = format == AV_SAMPLE_FMT_S16P.rawValue || format == AV_SAMPLE_FMT_S32P.rawValue
            copyIntegers(frame, bits: sampleBits, skip: Int(skip), frames: Int(count), channels: Int(channels), planar: planar)
            return
        }
        if swrInput == nil || swrInput! != (format, rate, channels) {
            flushResampler()
            try configureResampler(frame)
        }
        let sampleFormat = AVSampleFormat(rawValue: format)
        let bytesPerSample = Int(av_get_bytes_per_sample(sampleFormat))
        let planar = av_sample_fmt_is_planar(sampleFormat) != 0
        let planes = planar ? Int(channels) : 1
        let step = planar ? bytesPerSample : bytesPerSample * Int(channels)
        var inputs: [UnsafePointer<UInt8>?] = (0..<planes).map { i in
            frame.pointee.extended_data[i].map { UnsafePointer($0 + Int(skip) * step) }
        }
        let outCapacity = Int(swr_get_out_samples(swr, Int32(count))) + 32
        ensureScratch(outCapacity)
        let produced = inputs.withUnsafeMutableBufferPointer { inPtr in
            scratch.withUnsafeMutableBufferPointer { outPtr in
                swr_convert(swr, outPtr.baseAddress, Int32(outCapacity), inPtr.baseAddress, Int32(count))
            }
        }
        guard produced >= 0 else {
            throw AudioError(.invalidState, component: component, "resampling failed", underlying: CodecMapping.errorText(produced))
        }
        appendScratch(Int(produced))
    }

    /// Copies `frames` Float32 frames from `skip` on into the FIFO, (de)interleaving as needed.
    func copyFloat(_ frame: UnsafeMutablePointer<AVFrame>, skip: Int, frames: Int, channels: Int, planar: Bool) {
        guard let data = frame.pointee.extended_data else { return }
        func plane(_ i: Int) -> UnsafePointer<Float>? { data[i].map { UnsafeRawPointer($0).assumingMemoryBound(to: Float.self) } }
        if planar == (outPlanes > 1) {
            // Same layout: one copy per plane.
            let perPlane = planar ? 1 : channels
            for p in 0..<outPlanes {
                guard let src = plane(p) else { continue }
                fifo[p].append(UnsafeRawBufferPointer(start: src + skip * perPlane, count: frames * perPlane * 4))
            }
        } else if planar {
            // Planar decoder output, interleaved destination.
            let dst = fifo[0].extendFloats(by: frames * channels)
            for c in 0..<channels {
                guard let src = plane(c) else {
                    for f in 0..<frames { dst[f * channels + c] = 0 }
                    continue
                }
                for f in 0..<frames { dst[f * channels + c] = src[skip + f] }
            }
        } else if let src = plane(0) {
            appendDeinterleaved(src + skip * channels, frames: frames, channels: channels)
        }
    }

    /// 16 or 32 for libavcodec's signed integer sample formats, else nil.
    static func integerSampleBits(_ format: Int32) -> Int? {
        switch format {
        case AV_SAMPLE_FMT_S16.rawValue, AV_SAMPLE_FMT_S16P.rawValue: 16
        case AV_SAMPLE_FMT_S32.rawValue, AV_SAMPLE_FMT_S32P.rawValue: 32
        default: nil
        }
    }

    /// Converts `frames` frames of 16- or 32-bit integer samples from `skip` on to Float32 in
    /// the FIFO, (de)interleaving as needed.
    func copyIntegers(_ frame: UnsafeMutablePointer<AVFrame>, bits: Int, skip: Int, frames: Int, channels: Int, planar: Bool) {
        guard let data = frame.pointee.extended_data, frames > 0 else { return }
        let interleavedOut = outPlanes == 1 && channels > 1
        // Each output plane gets its channels from (source plane, first sample, stride).
        func convert(into dst: UnsafeMutablePointer<Float>, dstStride: Int, channel c: Int) {
            let plane = planar ? c : 0
            guard let raw = data[plane] else {
                for f in 0..<frames { dst[f * dstStride] = 0 }
                return
            }
            let first = planar ? skip : skip * channels + c
            let stride = planar ? 1 : channels
            if bits == 16 {
                let src = UnsafeRawPointer(raw).assumingMemoryBound(to: Int16.self) + first
                Self.scale(src, stride: stride, into: dst, dstStride: dstStride, count: frames, by: 1.0 / 32768.0)
            } else {
                let src = UnsafeRawPointer(raw).assumingMemoryBound(to: Int32.self) + first
                Self.scale(src, stride: stride, into: dst, dstStride: dstStride, count: frames, by: 1.0 / 2_147_483_648.0)
            }
        }
        if interleavedOut {
            let dst = fifo[0].extendFloats(by: frames * channels)
            for c in 0..<channels { convert(into: dst + c, dstStride: channels, channel: c) }
        } else {
            for c in 0..<Swift.min(outPlanes, channels) {
                convert(into: fifo[c].extendFloats(by: frames), dstStride: 1, channel: c)
            }
        }
    }

    /// `dst[i * dstStride] = Float(src[i * stride]) * factor` for `count` samples (contiguous
    /// runs get their own loop so that they vectorize).
    @inline(__always)
    static func scale<T: BinaryInteger>(_ src: UnsafePointer<T>, stride: Int, into dst: UnsafeMutablePointer<Float>,
                                                dstStride: Int, count: Int, by factor: Float) {
        if stride == 1 && dstStride == 1 {
            for i in 0..<count { dst[i] = Float(src[i]) * factor }
        } else {
            for i in 0..<count { dst[i * dstStride] = Float(src[i * stride]) * factor }
        }
    }

    /// Appends interleaved Float32 frames to the planes of a non-interleaved destination.
    func appendDeinterleaved(_ start: UnsafePointer<Float>, frames: Int, channels: Int) {
        if channels == 2 && outPlanes >= 2 {
            // Stereo (most of what is decoded): both planes in one pass over the source.
            let left = fifo[0].extendFloats(by: frames), right = fifo[1].extendFloats(by: frames)
            for f in 0..<frames {
                left[f] = start[2 * f]
                right[f] = start[2 * f + 1]
            }
            return
        }
        for plane in 0..<Swift.min(outPlanes, channels) {
            let dst = fifo[plane].extendFloats(by: frames)
            for f in 0..<frames { dst[f] = start[f * channels + plane] }
        }
    }

    func configureResampler(_ frame: UnsafeMutablePointer<AVFrame>) throws(AudioError) {
        swr_free(&swr)
        var inLayout = AVChannelLayout()
        var outLayout = AVChannelLayout()
        defer { av_channel_layout_uninit(&inLayout); av_channel_layout_uninit(&outLayout) }
        let channels = frame.pointee.ch_layout.nb_channels
        if frame.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC {
            av_channel_layout_default(&inLayout, channels)
        } else {
            _ = withUnsafePointer(to: &frame.pointee.ch_layout) { av_channel_layout_copy(&inLayout, $0) }
        }
        if let map = channelMap {
            guard map.count == Int(destinationFormat.channelsPerFrame), map.allSatisfy({ $0 >= -1 && $0 < Int(channels) }) else {
                throw AudioError(.invalidArgument, component: component, "channel map \(map) does not fit \(channels) source and \(destinationFormat.channelsPerFrame) destination channels", osStatus: -50)
            }
            // Convert keeping the source channels; the map picks them when appending.
            _ = av_channel_layout_copy(&outLayout, &inLayout)
            mapSourceChannels = Int(channels)
        } else if Int32(destinationFormat.channelsPerFrame) == channels {
            mapSourceChannels = nil
            _ = av_channel_layout_copy(&outLayout, &inLayout) // same channels: no remixing
        } else {
            mapSourceChannels = nil
            av_channel_layout_default(&outLayout, Int32(destinationFormat.channelsPerFrame))
        }
        scratchFrames = 0 // the scratch layout may change with the channel count
        let status = swr_alloc_set_opts2(&swr, &outLayout, outFormat, Int32(destinationFormat.sampleRate),
                                         &inLayout, AVSampleFormat(rawValue: frame.pointee.format), frame.pointee.sample_rate, 0, nil)
        guard status >= 0, swr != nil else {
            throw AudioError(.unsupportedFormat, component: component, "cannot convert \(channels) channels at \(frame.pointee.sample_rate) Hz to \(destinationFormat)",
                             underlying: CodecMapping.errorText(status))
        }
        guard let swr = self.swr else { return }
        applyResamplerOptions(UnsafeMutableRawPointer(swr))
        let initStatus = swr_init(swr)
        guard initStatus >= 0 else {
            throw AudioError(.unsupportedFormat, component: component, "cannot set up sample conversion to \(destinationFormat)", underlying: CodecMapping.errorText(initStatus))
        }
        swrInput = (frame.pointee.format, frame.pointee.sample_rate, channels)
    }

    /// The options of ``sampleRateConverterQuality``, ``sampleRateConverterComplexity`` and
    /// ``dither`` on a resampler not yet initialised.
    func applyResamplerOptions(_ swr: UnsafeMutableRawPointer) {
        let size = sampleRateConverterQuality.filterSize
        switch sampleRateConverterComplexity {
        case .linear:
            av_opt_set_int(swr, "filter_size", 2, 0)
            av_opt_set(swr, "filter_type", "cubic", 0)
        case .normal, .minimumPhase:
            av_opt_set_int(swr, "filter_size", size, 0)
            if sampleRateConverterQuality == .max { av_opt_set_int(swr, "linear_interp", 1, 0) }
        case .mastering:
            av_opt_set_int(swr, "filter_size", size * 4, 0)
            av_opt_set(swr, "filter_type", "kaiser", 0)
            av_opt_set_int(swr, "kaiser_beta", 12, 0)
            av_opt_set_int(swr, "phase_shift", 12, 0)
            av_opt_set_int(swr, "linear_interp", 1, 0)
        }
        switch dither {
        case .none: break
        case .triangular: av_opt_set(swr, "dither_method", "triangular", 0)
        case .noiseShaping: av_opt_set(swr, "dither_method", "shibata", 0)
        }
    }

    func flushResampler() {
        guard let swr else { return }
        while true {
            let capacity = 4096
            ensureScratch(capacity)
            let produced = scratch.withUnsafeMutableBufferPointer { outPtr in
                swr_convert(swr, outPtr.baseAddress, Int32(capacity), nil, 0)
            }
            if produced <= 0 { break }
            appendScratch(Int(produced))
        }
    }

    var bytesPerSample: Int { Int(destinationFormat.bitsPerChannel / 8) }
    /// Channels in the resampler's output (the source's when a channel map is set).
    var scratchChannels: Int { mapSourceChannels ?? Int(destinationFormat.channelsPerFrame) }
    var scratchPlanes: Int { destinationFormat.isInterleaved ? 1 : scratchChannels }
    var scratchBytesPerFrame: Int { destinationFormat.isInterleaved ? bytesPerSample * scratchChannels : bytesPerSample }

    func ensureScratch(_ frames: Int) {
        guard frames > scratchFrames || scratch.count != scratchPlanes else { return }
        for p in scratch { av_free(p) }
        scratchFrames = Swift.max(frames, 4096)
        scratch = (0..<scratchPlanes).map { _ in av_malloc(scratchFrames * scratchBytesPerFrame)?.assumingMemoryBound(to: UInt8.self) }
    }

    func appendScratch(_ frames: Int) {
        guard frames > 0 else { return }
        guard let map = channelMap, mapSourceChannels != nil else {
            for plane in 0..<outPlanes {
                guard let p = scratch[plane] else { continue }
                fifo[plane].append(UnsafeRawBufferPointer(start: p, count: frames * outBytesPerFrame))
            }
            return
        }
        let bps = bytesPerSample
        if destinationFormat.isInterleaved {
            guard let src = scratch[0] else { return }
            let srcFrame = bps * scratchChannels
            for f in 0..<frames {
                for c in map {
                    if c < 0 {
                        fifo[0].appendZeros(bps)
                    } else {
                        fifo[0].append(UnsafeRawBufferPointer(start: src + f * srcFrame + c * bps, count: bps))
                    }
                }
            }
        } else {
            for (plane, c) in map.enumerated() {
                if c < 0 {
                    fifo[plane].appendZeros(frames * bps)
                } else if let src = scratch[c] {
                    fifo[plane].append(UnsafeRawBufferPointer(start: src, count: frames * bps))
                }
            }
        }
    }
}
